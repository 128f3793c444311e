"""The span tree, the builder's second job: parent links checked (orphans become local roots,
parent cycles are cut), a walk order, and which spans are run roots and which spans each
root owns. `build_runs` and the cheap `run_roots` share it, so they agree on the roots."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from transforms.reasons import Reason
from transforms.types import Span

__all__ = ["Marked", "SpanTree", "build_tree", "select_roots"]


@dataclass(slots=True)
class SpanTree:
    """The spans of one trace as a forest.

    Attributes:
        order: every span id, depth first, children in start-time order.
        parent: each span's parent in the tree (None for a root, an orphan, a cut cycle).
        children: each span's children, in start-time order.
    """

    order: list[str] = field(default_factory=list)
    parent: dict[str, str | None] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)


def build_tree(spans: Mapping[str, Span], reasons: Counter[str]) -> SpanTree:
    """The tree of `spans` (by id); orphans, cycles and a missing root are counted."""
    children: defaultdict[str, list[str]] = defaultdict(list)
    roots: list[str] = []
    true_roots = 0
    for sid, s in spans.items():
        p = s.parent_span_id
        if p is None:
            roots.append(sid)
            true_roots += 1
        elif p == sid:
            reasons[Reason.PARENT_CYCLE] += 1
            roots.append(sid)
        elif p not in spans:
            reasons[Reason.ORPHAN] += 1
            roots.append(sid)
        else:
            children[p].append(sid)
    if spans and true_roots == 0:
        reasons[Reason.NO_ROOT] += 1

    def start_key(x: str) -> tuple[int, str]:
        return (spans[x].start_time_unix_nano, x)

    for lst in children.values():
        lst.sort(key=start_key)
    roots.sort(key=start_key)
    tree = SpanTree(children=children)
    order, parent = tree.order, tree.parent

    def walk(top: str) -> None:
        parent.setdefault(top, None)
        stack = [top]
        while stack:
            sid = stack.pop()
            order.append(sid)
            kids = children.get(sid, ())
            for k in reversed(kids):
                parent[k] = sid
                stack.append(k)

    for r in roots:
        walk(r)
    if len(order) < len(spans):  # what no root reaches hangs on a parent cycle
        reached = set(order)
        for sid in spans:
            if sid in reached:
                continue
            seen: set[str] = set()
            cur = sid
            while cur not in reached and cur not in seen:
                seen.add(cur)
                nxt = spans[cur].parent_span_id
                assert nxt is not None
                cur = nxt
            if cur in reached:
                continue
            reasons[Reason.PARENT_CYCLE] += 1
            p = spans[cur].parent_span_id
            if p is not None and cur in children.get(p, []):
                children[p].remove(cur)
            before = len(order)
            walk(cur)
            reached.update(order[before:])
    return tree


class Marked(Protocol):
    """What root selection reads of a span: `SpanFacts` and `Mark` both have it."""

    @property
    def role(self) -> str: ...  # noqa: D102
    @property
    def agent_name(self) -> str | None: ...  # noqa: D102
    @property
    def agent_id(self) -> str | None: ...  # noqa: D102


def select_roots(tree: SpanTree, marks: Mapping[str, Marked], calls: Container[str],
                 is_empty: Callable[[str], bool], reasons: Counter[str]) -> dict[str, list[str]]:
    """The run roots, each with the spans it owns (itself first, tree order), in tree order.

    A root is an agent span with no agent ancestor of the same identity (a nested agent of
    another identity is a run of its own), or a workflow span with no agent span around or
    below it. Without any, each outermost model call is a ("bare") root. An agent span that
    only wraps agent spans — no model call of its own and `is_empty` (no input or output of
    its own) — is no invocation (`agent_wrapper`): its agents are the runs.

    Args:
        tree: the span tree.
        marks: role and agent identity per span a convention reads.
        calls: the spans that record model calls.
        is_empty: whether a root agent span records no input and no output of its own.
        reasons: where `agent_wrapper` is counted.
    """
    order, parent, children = tree.order, tree.parent, tree.children
    has_agent_below: dict[str, bool] = {}
    for sid in reversed(order):
        below = False
        for k in children.get(sid, ()):
            km = marks.get(k)
            if has_agent_below.get(k) or (km is not None and km.role == "agent"):
                below = True
                break
        has_agent_below[sid] = below
    owner: dict[str, str | None] = {}
    roots: list[str] = []
    for sid in order:
        par = parent.get(sid)
        run_of = owner.get(par) if par is not None else None
        m = marks.get(sid)
        new_root = False
        if m is not None and m.role == "agent":
            if run_of is None:
                new_root = True
            else:
                up = marks[run_of]
                new_root = up.role != "agent" or (up.agent_name, up.agent_id) != (
                    m.agent_name, m.agent_id)
        elif m is not None and m.role == "workflow":
            new_root = run_of is None and not has_agent_below[sid]
        if new_root:
            roots.append(sid)
            owner[sid] = sid
        else:
            owner[sid] = run_of
    if not roots:  # no agent span: one "bare" run per outermost model call
        for sid in order:
            par = parent.get(sid)
            run_of = owner.get(par) if par is not None else None
            if run_of is None and sid in calls:
                roots.append(sid)
                owner[sid] = sid
            else:
                owner[sid] = run_of
    owned: dict[str, list[str]] = {r: [] for r in roots}
    for sid in order:
        o = owner.get(sid)
        if o is not None:
            owned[o].append(sid)
    for root in roots:
        if has_agent_below.get(root) and not any(sid in calls for sid in owned[root]) \
                and is_empty(root):
            del owned[root]
            reasons[Reason.AGENT_WRAPPER] += 1
    return owned
