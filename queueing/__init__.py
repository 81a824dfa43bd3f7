"""Queueing: pending-workload queues per ClusterQueue, and the Redis store."""
