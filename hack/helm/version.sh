# The helm release kuota's chart is linted, rendered and installed with in tests
# (built from the Go module helm.sh/helm/v3 by hack/helm/build-helm.sh).
KUOTA_HELM_VERSION=v3.22.0
