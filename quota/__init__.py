"""Quota: resource amounts, the API objects, and the cohort tree of ClusterQueues."""
