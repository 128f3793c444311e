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
        if len(lst) > 1:  # most spans have one child: no key call for it
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
                 is_empty: Callable[[str], bool], reasons: Counter[str],
                 spans: Mapping[str, Span]) -> dict[str, list[str]]:
    """The run roots, each with the spans it owns (itself first, tree order), in tree order.

    One run per invocation of the agent the user called:

    * An agent span with no agent span around it is a root (or a workflow span with no agent
      span around or below it).
    * An agent span inside another agent's run is a part of that run (a graph node, a loop
      step or cycle that a framework also marks as an agent) unless the framework says it
      is a separate agent: it names it (`_names_itself`: an attribute of the span holds its
      name or id, rather than the name being read off the span's own name) and the name
      differs from the enclosing agent's (a handoff, an agent-as-tool, a sub-agent).
    * An agent span that only wraps agent spans — no model call of its own and `is_empty`
      (no input or output of its own) — is no invocation (`agent_wrapper`): its agents are
      the runs. A workflow root (a chain, graph or pipeline) with no model call under it asked
      no model: no run.
    * Without any agent or workflow root, model calls are grouped by the outermost span
      around them that a convention reads (a framework's chain, graph or task span: the
      unit of work the framework recorded), stopping at tool spans and at spans no
      convention reads (HTTP handlers and the like); a model call with none around it — or
      whose outermost such span hangs on a parent that has not arrived (the agent span may
      be on its way) — is a ("bare") root of its own.

    Args:
        tree: the span tree.
        marks: role and agent identity per span a convention reads.
        calls: the spans that record model calls.
        is_empty: whether a root agent span records no input and no output of its own.
        reasons: where `agent_wrapper` is counted.
        spans: the spans by id (their attributes tell whether an agent names itself).
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
                new_root = up.role != "agent" or (
                    (up.agent_name, up.agent_id) != (m.agent_name, m.agent_id)
                    and _names_itself(spans[sid], m))
        elif m is not None and m.role == "workflow":
            new_root = run_of is None and not has_agent_below[sid]
        if new_root:
            roots.append(sid)
            owner[sid] = sid
        else:
            owner[sid] = run_of
    if not roots:
        roots = _call_roots(tree, marks, calls, owner, spans)
    owned: dict[str, list[str]] = {r: [] for r in roots}
    for sid in order:
        o = owner.get(sid)
        if o is not None:
            owned[o].append(sid)
    for root in roots:
        if any(sid in calls for sid in owned[root]):
            continue
        if has_agent_below.get(root) and is_empty(root):
            del owned[root]
            reasons[Reason.AGENT_WRAPPER] += 1
        elif marks[root].role == "workflow":  # a chain or pipeline that asked no model
            del owned[root]  # (a trace left without runs is counted `no_run` by the builder)
    return owned


def _names_itself(span: Span, m: Marked) -> bool:
    """Whether an agent span carries its own agent identity: an id, or a name that one of its
    attributes holds. A name a convention could only read off the span's name (a graph node
    `agent`, a `Step 3`) is no identity: such a span is a step of the agent around it."""
    if m.agent_id is not None:
        return True
    name = m.agent_name
    return name is not None and any(v == name for v in span.attributes.values())


def _call_roots(tree: SpanTree, marks: Mapping[str, Marked], calls: Container[str],
                owner: dict[str, str | None], spans: Mapping[str, Span]) -> list[str]:
    """The roots of a trace without agent spans (see `select_roots`), `owner` filled."""
    order, parent = tree.order, tree.parent
    tops: set[str] = set()
    owner.clear()
    for sid in order:
        par = parent.get(sid)
        if (owner.get(par) if par is not None else None) is None and sid in calls:
            top = sid
            up = parent.get(top)
            while up is not None and (um := marks.get(up)) is not None and um.role != "tool":
                top = up
                up = parent.get(top)
            p = spans[top].parent_span_id
            if p is not None and p not in spans:
                top = sid  # an orphan: what encloses it has not arrived
            tops.add(top)
            owner[sid] = sid  # provisional: what is under it is owned, whatever its top
        else:
            owner[sid] = owner.get(par) if par is not None else None
    if not tops:
        return []
    roots: list[str] = []
    owner.clear()
    for sid in order:
        par = parent.get(sid)
        run_of = owner.get(par) if par is not None else None
        if run_of is None and sid in tops:
            roots.append(sid)
            run_of = sid
        owner[sid] = run_of
    return roots
