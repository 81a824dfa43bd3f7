"""A real Kubernetes control plane for kuota's real test tier.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, built
from Go modules by ``hack/cluster/build-bins.sh`` into a cache outside the
repository, started on 127.0.0.1 by :class:`ControlPlane`. The emulator
(tests/emulator) is fast; this is the judge: when the two disagree, the real
cluster is right and the emulator learns the difference. See docs/dev/real-tier.md.
"""

