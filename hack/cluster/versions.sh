# The Kubernetes releases kuota's real test tier runs against (newest patch of
# two minors the Go module proxy serves: their Job controllers differ in how
# suspend treats status.startTime), and the kwok release that fakes nodes.
KUOTA_K8S_VERSIONS=(v1.34.4 v1.36.3)
KUOTA_KWOK_VERSION=v0.8.0
