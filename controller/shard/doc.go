// Package shard lets an install's replicas share the FlinkClusters. Each replica is a member
// with a coordination.k8s.io/v1 Lease of its own (labelled GroupLabel) that it renews; a
// cluster belongs to the live member that rendezvous hashing names (Owner). There is no
// consensus, only rules on each member's own monotonic clock. With D the lease duration and m
// the margin (Timing), a member acts on a cluster (every write and Flink REST call; not
// Events, which change nothing) only through Membership.Begin, under a deadline that ends its
// right to act:
//
//   - Renew: a renewal sent at s and answered within m grants the right until s + D - 2m,
//     with the view of the list that follows it; a later answer grants nothing.
//   - Join: after a renewal sent once its right ran out, a member waits D before it acts.
//   - Leave: a peer is gone once its Lease's resourceVersion stayed unchanged for more than
//     D + m, from when this member first saw it to when it sent its list.
//   - Act: only while its right lasts and Owner names it among the members of its view.
//
// # Why two members never act on one cluster
//
// Assume: (A1) clock rates within ε of real time, with 2εD ≤ m (the defaults allow 10 %), and
// no clock stops while its requests are in flight; (A2) a request sent before its deadline
// takes effect, if at all, within m; (A3) only members write or delete their Leases; (A4)
// lists are consistent reads of the API server.
//
// Lemma: if A's view comes from a list served at real time L that leaves B out, B's actions
// take effect before L or after A's under that view, which land before s_A + (D-2m)(1+ε) + m,
// s_A < L being A's renewal before the list. If B's Lease is unlisted, B had not joined, left
// after its actions landed, or was deleted as stale (precondition on a version unchanged for
// 10(D + m)); its next renewal commits after L and is a join, so B acts from L + D(1-ε), after
// A's last effect since m ≥ 2εD. If B's record v is listed, first seen by A at f, and
// unchanged for more than D + m, then L > f + (D+m)(1-ε); v was sent before f, so B's effects
// under it land before f + (D-m)(1+ε) < L, and a renewal after v that commits after L was
// sent after B's right ran out: a join, as above.
//
// Theorem: if A and B act on cluster X, each is in its own view and Owner takes the highest
// weight, so were each in the other's, weight(A, X) > weight(B, X) > weight(A, X): one view
// leaves the other out, and by the lemma their actions on X do not overlap. This holds through
// partitions (a member that cannot renew stops at s + D - 2m) and pauses of any length (the
// deadline passes meanwhile; the next renewal is a join).
//
// # What a new owner reads
//
// A new owner must see what the previous one did, or it could repeat it (a savepoint, a
// deploy), yet FlinkClusters, JobManager pods and HA ConfigMaps come from watch caches.
// Membership.Tenure replaces uncached reads: it changes with each join and each change of the
// members. A member trusts its cache for a cluster only while it shows the newest version the
// member read from the API server or wrote under the same tenure; a member that gained a
// cluster has no such record, so it reads the cluster, its pods and HA ConfigMaps from the API
// server, after the previous owner's writes landed (lemma). Another member acts on this one's
// clusters only under a view leaving it out, which needs its Lease unchanged for D + m, past
// its right, so its next renewal is a join and changes the tenure. An old JobManager's pod and
// HA ConfigMap are confirmed gone from the API server before a JobManager is created.
//
// Cost: a lost member's clusters move within D + m + RenewPeriod of its last renewal; a
// joining member takes its share D after it joined; an action outliving its renewal's
// validity is cancelled at the deadline and retried. A per-cluster epoch with a
// resourceVersion precondition would fence only status writes, not the Flink REST calls nor
// the owned objects; time fences every request alike.
package shard
