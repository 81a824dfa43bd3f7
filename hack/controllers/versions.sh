# The peer controllers kuota's real test tier runs beside it (the workloads of other
# frameworks kuota must queue, as Kueue does), each pinned to one release the Go
# module proxy serves. One entry per controller, five fields and some options:
#
#   name  Go-module  version  main-package-in-module  CRDs-in-module  [option=value ...]
#
#   CRDs-in-module    a directory (every YAML file in it) or one YAML file
#   crd-exclude=F,..  files of that directory left out (a CRD another controller owns)
#   webhook=DIR       the kustomize directory of its admission webhook configurations,
#                     kept so the tests register the controller's own webhooks
#   rbac=DIR|F,..     its ServiceAccount and RBAC, kept so the tests run it as that
#                     ServiceAccount, as a cluster would: a kustomize directory, a
#                     directory of YAML files, or a comma-separated list of YAML files
#   version-var=P.V   the string variable stamped with the version (-ldflags -X), and
#   commit-var=P.V    the one stamped with the release's commit, as its Makefile does
#
# build-controllers.sh builds each into $KUOTA_CACHE/controllers/<name>/<version>/
# (bin/manager, crds/, webhook/, rbac/); tests/cluster/controllers.py reads this file too.
KUOTA_CONTROLLERS=(
  "jobset sigs.k8s.io/jobset v0.10.1 . config/components/crd/bases webhook=config/components/webhook rbac=config/components/rbac version-var=sigs.k8s.io/jobset/pkg/version.GitVersion commit-var=sigs.k8s.io/jobset/pkg/version.GitCommit"
  # Kubeflow's v1 training operator (PyTorchJob, TFJob, XGBoostJob, PaddleJob, MXJob; no
  # JAXJob before v1.9). Its MPIJob v1 CRD is left out: it is mpijobs.kubeflow.org, the
  # same CRD as the MPI operator's v2beta1 one below, which is the MPIJob kuota queues.
  "training-operator github.com/kubeflow/training-operator v1.8.1 cmd/training-operator.v1 manifests/base/crds crd-exclude=kubeflow.org_mpijobs.yaml webhook=manifests/base/webhook rbac=manifests/base/rbac"
  # MPIJob kubeflow.org/v2beta1. Its RBAC files sit beside its Deployment in manifests/base.
  "mpi-operator github.com/kubeflow/mpi-operator v0.6.0 cmd/mpi-operator manifests/base/kubeflow.org_mpijobs.yaml rbac=manifests/base/service-account.yaml,manifests/base/cluster-role.yaml,manifests/base/cluster-role-binding.yaml version-var=github.com/kubeflow/mpi-operator/pkg/version.Version commit-var=github.com/kubeflow/mpi-operator/pkg/version.GitSHA"
  # KubeRay's operator (RayCluster, RayJob, RayService; ray.io/v1). Its version is a constant.
  "kuberay github.com/ray-project/kuberay/ray-operator v1.5.0 . config/crd/bases rbac=config/rbac"
  # LeaderWorkerSet (leaderworkerset.x-k8s.io/v1). Its webhooks mutate and validate
  # LeaderWorkerSets and the pods of their StatefulSets (which they label with group and
  # worker indexes): they must run for it to work.
  "lws sigs.k8s.io/lws v0.7.0 cmd config/crd/bases webhook=config/webhook rbac=config/rbac version-var=sigs.k8s.io/lws/pkg/version.GitVersion commit-var=sigs.k8s.io/lws/pkg/version.GitCommit"
  # Kubeflow Trainer v2 (TrainJob, TrainingRuntime, ClusterTrainingRuntime;
  # trainer.kubeflow.org/v1alpha1): a TrainJob runs through a JobSet (the jobset entry
  # above) built from its runtime. Only validating webhooks; its certificates come from
  # outside when its certManagement is off (the tests' way).
  "trainer github.com/kubeflow/trainer/v2 v2.1.0 cmd/trainer-controller-manager manifests/base/crds webhook=manifests/base/webhook rbac=manifests/base/rbac"
)
