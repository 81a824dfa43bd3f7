# The peer controllers kuota's real test tier runs beside it (the workloads of other
# frameworks kuota must queue, as Kueue does), each pinned to one release the Go
# module proxy serves. One entry per controller, five fields and some options:
#
#   name  Go-module  version  main-package-in-module  CRD-directory-in-module  [option=value ...]
#
#   webhook=DIR       the kustomize directory of its admission webhook configurations,
#                     kept so the tests register the controller's own webhooks
#   rbac=DIR          the kustomize directory of its ServiceAccount and RBAC, kept so
#                     the tests run it as that ServiceAccount, as a cluster would
#   version-var=P.V   the string variable stamped with the version (-ldflags -X), and
#   commit-var=P.V    the one stamped with the release's commit, as its Makefile does
#
# build-controllers.sh builds each into $KUOTA_CACHE/controllers/<name>/<version>/
# (bin/manager, crds/, webhook/, rbac/); tests/cluster/controllers.py reads this file too.
KUOTA_CONTROLLERS=(
  "jobset sigs.k8s.io/jobset v0.10.1 . config/components/crd/bases webhook=config/components/webhook rbac=config/components/rbac version-var=sigs.k8s.io/jobset/pkg/version.GitVersion commit-var=sigs.k8s.io/jobset/pkg/version.GitCommit"
)
