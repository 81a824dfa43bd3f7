"""``kuota submit --wait`` exits with the workload's own status (issue 12)."""

from __future__ import annotations

import pytest

from kuota.client import PodStatus, WorkloadStatus
from kuota.commands.submit import exit_status


def _status(outcome: str, *codes: int | None) -> WorkloadStatus:
    return WorkloadStatus("default/w", "Finished", outcome, "", "", "cq", 1,
                          [PodStatus(i, "n1", "Failed" if c else "Succeeded", c)
                           for i, c in enumerate(codes)])


@pytest.mark.parametrize(("status", "want_exit"), [
    (_status("Succeeded", 0, 0), 0),
    (_status("Failed", 0, 3), 3),
    (_status("Failed", 2, 5), 2),
    (_status("Failed", -9), 137),  # killed by SIGKILL, as a shell reports it
    (_status("Failed", 300), 255),
    (_status("Cancelled", None), 1),
    (_status("Failed"), 1),
])
def test_wait_exits_with_the_first_failed_pods_code(status: WorkloadStatus,
                                                    want_exit: int) -> None:
    assert exit_status(status) == want_exit
