"""The leader's node view read again: what changed gets a new value, what did not keeps its
object (placement's rankings re-rank only changed nodes), and records just read are used
as given."""

from __future__ import annotations

import pytest

from kuota.service.nodeview import NodeView
from placement.model import Node
from tests.unit.store.store_builders import admit, lead, new_store, node, place, submit


def by_name(view: NodeView) -> dict[str, Node]:
    return {n.name: n for pool in view.pools().values() for n in pool}


@pytest.mark.parametrize(("change", "want_new"), [
    ("nothing", set()),
    ("a pod placed on n1", {"n1"}),
    ("n2 registered again", {"n2"}),
])
def test_a_read_again_keeps_the_values_of_unchanged_nodes(change: str,
                                                          want_new: set[str]) -> None:
    store = new_store()
    epochs = {name: node(store, name) for name in ("n1", "n2", "n3")}
    view = NodeView(store)
    before = by_name(view)
    if change == "a pod placed on n1":
        holder = lead(store)
        submit(store)
        admit(store, holder)
        assert place(store, holder, "ns/w", 1, [("n1", epochs["n1"])]) == "ok"
    elif change == "n2 registered again":
        store.nodes.register("n2", pool="p", capacity={"cpu": 8000}, labels={}, devices=[],
                             now=2.0, replace=True)
    view.refresh()
    after = by_name(view)
    assert {name for name in after if after[name] is not before[name]} == want_new
    assert all(after[name] == before[name] for name in after if name not in want_new)


def test_records_just_read_are_not_read_again() -> None:
    store = new_store()
    node(store, "n1")
    view = NodeView(store)
    records = store.nodes.all()
    node(store, "n2")  # registered after the read: the view is as of `records`
    view.refresh(records)
    assert sorted(by_name(view)) == ["n1"]
    view.refresh()
    assert sorted(by_name(view)) == ["n1", "n2"]
