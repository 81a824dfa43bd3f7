"""``kuota worker`` — one node of a worker pool (Redis mode).

The worker holds the pool's Redis credentials and runs tenants' commands beside
them, so it first makes itself unreadable to other processes of its user and
starts every pod from a clean environment (:mod:`kuota.service.secrecy`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from kuota.service import cli, secrecy
from kuota.service.podusers import PodUsers
from kuota.service.supervisor import SupervisorTiming
from kuota.service.worker import PoolWorker, WorkerOptions
from quota.resources import QuantityError, parse_vector


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "worker",
        description="Register a node of a pool (capacity, labels, heartbeat) and run the pods "
                    "the scheduler places on it, each command as a subprocess. A "
                    "ResourceFlavor's nodeLabels select nodes by these labels. Stop with "
                    "SIGTERM/Ctrl-C: running pods are terminated and their workloads requeued. "
                    "Pods get their own env, the KUOTA_* variables and PATH, HOME, TMPDIR, "
                    "TZ, LANG, LANGUAGE and LC_* of the worker's environment, nothing else "
                    "of it; on Linux the worker makes itself unreadable to other processes "
                    "of its user (no /proc/PID/environ, no ptrace). Give the password with "
                    "--password-file or REDIS_PASSWORD, never in --redis (ps shows it), and "
                    "--pod-uids to keep jobs apart from each other.")
    parser.add_argument("--pool", required=True, help="pool (a group of nodes run as one)")
    parser.add_argument("--node", required=True, help="node name, unique in the deployment")
    parser.add_argument("--resources", required=True, metavar="LIST",
                        help="capacity, e.g. cpu=8,memory=32Gi,nvidia.com/gpu=2")
    parser.add_argument("--labels", default="", metavar="LIST", help="node labels, e.g. "
                        "gpu=a100,zone=lab1")
    parser.add_argument("--gpu-devices", default=None, metavar="LIST",
                        help="GPU device ids for CUDA_VISIBLE_DEVICES (default 0..N-1 for "
                             "nvidia.com/gpu=N)")
    parser.add_argument("--heartbeat", type=float, default=5.0, metavar="SECONDS",
                        help="heartbeat interval (default 5; keep well under the scheduler's "
                             "--node-timeout)")
    parser.add_argument("--grace", type=float, default=5.0, metavar="SECONDS",
                        help="seconds between SIGTERM and SIGKILL when stopping a pod "
                             "(default 5)")
    parser.add_argument("--reconcile", type=float, default=10.0, metavar="SECONDS",
                        help="how often to compare the pods the store says run here with the "
                             "processes that do, reporting again an exit the store lost "
                             "(default 10)")
    parser.add_argument("--replace", action="store_true",
                        help="take the node name over from a worker still running under it "
                             "(it is fenced and stops); without it such a start is refused")
    parser.add_argument("--pod-uids", metavar="START-END", default=None,
                        help="run each pod as its own user id from this range (the worker "
                             "must run as root), so jobs on the node cannot read each "
                             "other's environment, files or output")
    parser.add_argument("--log-dir", type=Path, default=None,
                        help="where pod output is buffered before it is sent to Redis "
                             "(default a temporary directory)")
    cli.add_store_args(parser)
    cli.add_log_args(parser)
    parser.set_defaults(func=run)


@cli.handles_errors
def run(args: argparse.Namespace) -> int:
    cli.setup_logging(args)
    secrecy.make_undumpable()  # before the password is read; pods are not affected
    devices = None
    if args.gpu_devices is not None:
        devices = [d.strip() for d in args.gpu_devices.split(",") if d.strip()]
    try:
        capacity = parse_vector(args.resources)
    except QuantityError as exc:
        print(f"error: --resources: {exc}", file=sys.stderr)
        return 2
    pod_users = None
    if args.pod_uids is not None:
        if os.geteuid() != 0:
            print("error: --pod-uids: the worker must run as root to start pods as other "
                  "users", file=sys.stderr)
            return 2
        try:
            pod_users = PodUsers.parse(args.pod_uids)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    options = WorkerOptions(
        pool=args.pool, node=args.node, capacity=capacity,
        labels=cli.parse_labels(args.labels), devices=devices, heartbeat=args.heartbeat,
        log_dir=args.log_dir, replace=args.replace, pod_users=pod_users,
        supervisor=SupervisorTiming(grace=args.grace, reconcile=args.reconcile))
    worker = PoolWorker(cli.connection(args), options)
    worker.run()
    if worker.fault:
        print(f"error: node {worker.node}: {worker.fault}; the node was taken out (its "
              "workloads are requeued)", file=sys.stderr)
    return 1 if worker.replaced or worker.fault else 0
