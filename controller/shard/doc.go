// Package shard lets the replicas of one install share the FlinkClusters: each replica is a
// member, with a coordination.k8s.io/v1 Lease of its own (labelled GroupLabel with the
// install's group) that it renews; each cluster ("namespace/name") belongs to the live member
// that rendezvous hashing names (Owner). The Leases are Kubernetes' own machinery; there is no
// consensus here, only rules on time measured by each member on its own monotonic clock.
//
// # The fence
//
// A member acts on a cluster (every write of a reconcile, every Flink REST call; not the
// Events it records, which tell and change nothing) only from
// Membership.Begin, which says yes only while the member owns the cluster in its view and
// may act, and gives the action a context whose deadline is the end of that right. With D the
// lease duration and m the margin (Timing), on each member's own clock:
//
//   - Renew: a member's renewal (a write of its Lease) sent at s and answered within m
//     grants it the right to act until s + D - 2m, together with the view of the list that
//     follows it: a validity never goes with an older view. A renewal answered later than m
//     grants nothing.
//   - Join: a renewal sent after the member's right ran out (its first, or one after a
//     partition or a pause) makes it wait D from the answer before it acts.
//   - Leave: another member counts as gone once its Lease's record (its resourceVersion) has
//     stayed unchanged for more than D + m, from when this member first saw it to when it
//     sent its list; a Lease not listed is a member that is not there.
//   - Act: a member acts on a cluster only while it may act and Owner names it among the
//     members of its view; every request of the action carries the deadline.
//
// # Why two members never act on one cluster
//
// Assumptions, as for leader election: (A1) the members' clocks run at rates within ε of
// real time, with 2εD ≤ m (the defaults, D = 15 s and m = 3 s, allow 10 %; a quartz clock
// drifts by parts per million), and a clock does not stop while its process's requests are
// in flight (a suspended virtual machine's may); (A2) a request sent before its deadline
// takes effect, if at all, within m of its sending; (A3) no one but the members writes or
// deletes their Leases (deleting a live member's Lease by hand, like deleting a leader's
// election Lease, breaks the fence); (A4) a list is served from a consistent read of the
// API server (no cache).
//
// Lemma. Let A's view come from a list served at real time L that leaves B out. Then B's
// actions take effect only before L, or after A's actions under that view took effect.
// A acts under that view only before real s_A + (D - 2m)(1+ε), where s_A < L is the renewal
// that preceded the list; its requests land by then plus m.
//
//   - B's Lease is not listed: B had not joined, or left (it deletes its Lease only after its
//     actions landed), or a member deleted it as stale, with a precondition on a version
//     unchanged for 10(D + m). A later renewal of B is committed after L; if it is a join,
//     B acts from real L + D(1-ε) on, after A's last effect, L + (D - 2m)(1+ε) + m, since
//     m ≥ 2εD. A stale Lease is the case below: B's right ran out before the delete.
//   - B's record v is listed, first seen by A at f, and unchanged for more than D + m on A's
//     clock before A sent the list: L > f + (D+m)(1-ε). The renewal that wrote v was sent
//     before f, so B's right from it ends before f + (D-2m)(1+ε) and its effects land before
//     f + (D-m)(1+ε) < L, since m ≥ εD. A renewal of B after v commits after L; to extend
//     that right it must have been sent before the right ran out, and answered within m:
//     committed before f + (D-m)(1+ε) < L. Impossible: it is a join, handled as above.
//
// Theorem. If A and B both act on cluster X under views V_A and V_B, each is in its own
// view, and Owner is the highest weight over the view: were B in V_A and A in V_B, weight(A,
// X) > weight(B, X) > weight(A, X). So one view leaves the other member out, and by the lemma
// their actions on X do not overlap in time. The same holds through a partition (a member
// that cannot renew stops at s + D - 2m; the others take over after D + m) and a GC pause of
// any length (a paused member's deadline passes while it sleeps; its next renewal is a join).
//
// # What a new owner reads
//
// The theorem orders the members' actions on a cluster; a new owner must also see what the
// previous one did, or it could repeat it (a savepoint, a deploy). The controller reads the
// FlinkClusters, the JobManager pods and the HA ConfigMaps from watch caches, which may lag
// the API server; what stands for an uncached read is Membership.Tenure, which changes with
// every change of the view. A member remembers, per cluster, the newest version it read from
// the API server or wrote, with the tenure it knew it under, and trusts its cache only while
// the cache shows that version (or one it knows older, which it then replaces by its own)
// under the same tenure. A member that gained a cluster lost or never had it under its
// current tenure: it has no such record, and its first reconcile reads the cluster, its pods
// and its HA ConfigMaps from the API server (after the previous owner's writes landed, by the
// lemma), as before the caches. The tenure changes with the member's members and with its
// joins, and another member acts on a cluster this one owns only under a view that left this
// one out: that needs this member's Lease unchanged for D + m, longer than its right lasts,
// so that its next renewal is a join. A lapse of its right shorter than that (a slow list)
// changes no tenure, and no other member acted meanwhile.
// Whatever the caches show, the absence of an old JobManager pod or HA ConfigMap is confirmed
// from the API server before a JobManager is created.
//
// What the fence costs: a lost member's clusters move within D + m + RenewPeriod of its last
// renewal, a leaving one's at the others' next list; a joining member takes its share D after
// it joined, and the others, which lose only the clusters it takes, stop acting on those at
// once. An action longer than a renewal's remaining validity (D - 2m at most) is cancelled at
// its deadline and retried, as if the replica had crashed. A per-cluster epoch written with a
// resourceVersion precondition would fence the status writes only: the Flink REST calls and
// the writes of the owned objects carry no precondition on the FlinkCluster, so time is
// their fence in any case, and it fences every request alike.
package shard
