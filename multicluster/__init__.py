"""Multi-cluster: filter and score plugins that pick a member cluster."""
