// Package shard lets an install's replicas share the FlinkClusters: each is a member with a
// coordination.k8s.io/v1 Lease (labelled GroupLabel) it renews, and a cluster belongs to the
// live member rendezvous hashing names (Owner). There is no consensus, only rules on each
// member's monotonic clock, with D the lease duration and m the margin (Timing). A member acts
// on a cluster (every write and Flink REST call; Events change nothing) only through
// Membership.Begin, whose deadline ends its right to act:
//
//   - Renew: a renewal sent at s and answered within m grants the right until s + D - 2m,
//     with the view of the list after it; a later answer grants nothing.
//   - Join: after a renewal sent once its right ran out, a member waits D before it acts.
//   - Leave: a peer is gone once its Lease's resourceVersion stayed unchanged for more than
//     D + m, from when this member first saw it to when it sent its list.
//   - Act: only while its right lasts and Owner names it among its view's members.
//
// # Why two members never act on one cluster
//
// Assume (A1) clock rates within ε of real time, 2εD ≤ m (the defaults allow 10 %), and no
// clock stops while its requests are in flight; (A2) a request sent before its deadline lands,
// if at all, within m; (A3) only members write or delete their Leases; (A4) lists are
// consistent reads of the API server.
//
// Lemma: if A's view, from a list served at real time L, leaves B out, B's actions land before
// L or after A's under that view, which land before s_A + (D-2m)(1+ε) + m (s_A < L being A's
// renewal before the list). An unlisted B had not joined, left after its actions landed, or
// was deleted as stale (its version unchanged for 10(D + m)); its next renewal commits after L
// and is a join, so B acts from L + D(1-ε), after A's last effect as m ≥ 2εD. If B's record v
// is listed, first seen by A at f and unchanged for more than D + m, then L > f + (D+m)(1-ε):
// B's effects under v land before f + (D-m)(1+ε) < L, and a renewal after v that commits
// after L was sent after B's right ran out: a join, as above.
//
// Theorem: were A and B, acting on X, each in the other's view, Owner's highest weight would
// give weight(A, X) > weight(B, X) > weight(A, X); so one view leaves the other out and the
// lemma orders their actions, through partitions and pauses of any length alike.
//
// # What a new owner reads
//
// A new owner must see the previous one's writes or it could repeat them (a savepoint, a
// deploy), yet FlinkClusters, JobManager pods and HA ConfigMaps come from watch caches.
// Membership.Tenure stands for an uncached read: it changes with each join and change of the
// members, and a member trusts its cache for a cluster only while it shows the newest version
// the member read from the API server or wrote under the same tenure. So a member that gained
// a cluster reads it, its pods and HA ConfigMaps from the API server, after the previous
// owner's writes landed (lemma); another member acts on its clusters only under a view that
// left it out, which needs its Lease unchanged for D + m, so its next renewal is a join. An
// old JobManager's pod and HA ConfigMap are confirmed gone, from the API server, before a
// JobManager is created, unless the member added the finalizer to the cluster's untouched
// version and created no JobManager since under its tenure: every deploy is recorded before
// it is created, so there is none to confirm.
//
// Cost: a lost member's clusters move within D + m + RenewPeriod, and an action outliving its
// right is cancelled and retried. A per-cluster epoch would fence only status writes; time
// fences REST calls and owned objects too.
package shard
