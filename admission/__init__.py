"""Admission: the scheduling cycle that decides which workloads start, and how."""
