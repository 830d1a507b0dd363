"""What an operation is: a frozen value that says what it asks, where it runs and how it travels.

Every operation on the daemon (``thread.send``, ``approval.list``, the internal
``thread.kill_one`` a tree kill is made of, ...) is one class, declared with ``@op``:

- its params are dataclass fields made with ``param()`` (wire params: a kind from
  ``echsd.wire.params``, validated on construction, so every door gets the same checks and
  limits), ``arg()`` (internal values that travel between nodes) or ``local()`` (values bound
  to this process, e.g. the connection that registers tools: such an op never travels);
- ``where`` says where it runs (``Where``); ``route()`` names the place for one value;
- ``timeout_s``, ``result`` (docs), examples, and the client library's ``method``;
- its forwarding form (``forward_form`` / ``from_forward``): a versioned JSON shape for the
  cluster's ``requests`` table.

The wire's op table, ``docs/protocol.md``, the client library's methods and the forwarding
format all come from these classes. Handlers live with what they change (the thread actor,
the thread core, the router's node handlers) and are found by the op's class. This module
imports nothing of the daemon: the thin client loads it.
"""

from __future__ import annotations

import dataclasses
import enum
import secrets
from typing import Any, Callable, ClassVar, TypeVar

import orjson

from echsd.errors import BadRequest
from echsd.wire.params import MAX_DEPTH, Kind, Param, ParamsError, nesting_depth

DEFAULT_TIMEOUT_S = 30.0


class Where(enum.Enum):
    """Where an op runs; the router decides from this and the op's value (``route``)."""

    OWNER = "the node that runs the thread (through its worker, or its supervisor)"
    HERE = "the node the client is connected to (it sees every node's threads in the store)"
    NODE = "the node named by `node` (default: the one connected to)"
    EVERY = "every live node; their answers are merged"
    ANY = "the node that holds it (this one first, then the others)"
    CONNECTION = "the connection itself"


# ---- routes: where one op value runs ---------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class OwnerOf:
    thread_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class AtNode:
    node: str | None  # None: this node


class _Here:
    __slots__ = ()


class _Everywhere:
    __slots__ = ()


class _Anywhere:
    __slots__ = ()


HERE, EVERYWHERE, ANYWHERE = _Here(), _Everywhere(), _Anywhere()
Route = OwnerOf | AtNode | _Here | _Everywhere | _Anywhere


# ---- fields ----------------------------------------------------------------------------------

_PARAM, _ARG, _LOCAL = "param", "arg", "local"


def param(kind: Kind, description: str, *, required: bool = False, choices: tuple[Any, ...] = (), nullable: bool = False) -> Any:
    """A wire param. Optional ones default to None (a null on the wire means "not given")."""
    spec = {"kind": kind, "description": description, "required": required, "choices": choices, "nullable": nullable}
    if required:
        return dataclasses.field(metadata={_PARAM: spec})
    return dataclasses.field(default=None, metadata={_PARAM: spec})


def arg(default: Any = None) -> Any:
    """An internal value: not on the wire, but forwarded to other nodes (JSON-able)."""
    return dataclasses.field(default=default, metadata={_ARG: True})


def local(default: Any = None) -> Any:
    """A value bound to this process (a connection): the op cannot run on another node."""
    return dataclasses.field(default=default, compare=False, metadata={_LOCAL: True})


# ---- the base class --------------------------------------------------------------------------


class Op:
    """Base of every operation; subclasses are made with ``@op``."""

    __slots__ = ()

    op_name: ClassVar[str]  # as the wire names it, e.g. "thread.send" (not ``name``: a param may be)
    where: ClassVar[Where]
    summary: ClassVar[str]
    params: ClassVar[tuple[Param, ...]]  # on the wire, in order (a ``spread`` field's first)
    by_name: ClassVar[dict[str, Param]]
    own: ClassVar[frozenset[str]]  # the params that are fields of their own
    result: ClassVar[str] = ""
    notes: ClassVar[str] = ""
    example_params: ClassVar[dict[str, Any]] = {}
    example_result: ClassVar[Any] = None
    method: ClassVar[str | None] = None  # the client library's method (None: none)
    positional: ClassVar[tuple[str, ...]] = ()  # params that method takes by position, in order
    background: ClassVar[bool] = False  # the wire answers it when done; later requests do not wait
    wire: ClassVar[bool] = True  # False: internal (between the daemon's own parts and nodes)
    timeout_s: ClassVar[float] = DEFAULT_TIMEOUT_S
    version: ClassVar[int] = 1  # of the forwarding form; bump when its meaning changes
    forwardable: ClassVar[bool] = True  # False when it holds ``local()`` values
    spread: ClassVar[str | None] = None  # a dict field whose keys are wire params of their own

    def __post_init__(self) -> None:
        spread = self.spread
        gathered = getattr(self, spread) if spread is not None else None
        if gathered is not None:
            unknown = sorted(str(k) for k in gathered if k not in self.by_name or k == spread)
            if unknown:
                raise ParamsError(f"unknown param(s) for {self.op_name}: {', '.join(unknown)}")
        for each in self.params:
            if spread is not None and each.name not in self.own:
                value = (gathered or {}).get(each.name)
            else:
                value = getattr(self, each.name)
            if value is None:
                if each.required and not each.nullable:
                    raise ParamsError(f"missing param '{each.name}'")
                continue  # not given, or a null that is a value (nothing to check)
            if nesting_depth(value) > MAX_DEPTH:
                raise ParamsError(f"param '{each.name}' nests maps/arrays more than {MAX_DEPTH} levels deep")
            each.check(value)

    # ---- where --------------------------------------------------------------------------

    def route(self) -> Route:
        """Where this value runs (the default follows ``where``)."""
        where = self.where
        if where is Where.OWNER:
            return OwnerOf(getattr(self, "thread_id"))
        if where is Where.NODE:
            return AtNode(getattr(self, "node", None))
        if where is Where.EVERY:
            return EVERYWHERE
        if where is Where.ANY:
            return ANYWHERE
        return HERE

    def merge(self, parts: list[Any], page_bytes: int) -> Any:
        """``EVERY`` ops: one answer from every node's (this node's first); ``page_bytes``:
        what one page of a list may hold."""
        raise NotImplementedError(f"{self.op_name} runs on one node")

    # ---- from the wire ------------------------------------------------------------------

    @classmethod
    def validate(cls, params: dict[str, Any]) -> dict[str, Any]:
        """The wire params with nulls removed; raises ``ParamsError`` naming the bad field."""
        unknown = sorted(str(k) for k in params if k not in cls.by_name)
        if unknown:
            raise ParamsError(f"unknown param(s) for {cls.op_name}: {', '.join(unknown)}")
        clean: dict[str, Any] = {}
        for each in cls.params:
            value = params.get(each.name)
            if value is None:
                if each.nullable and each.name in params:
                    clean[each.name] = None
                    continue
                if each.required:
                    raise ParamsError(f"missing param '{each.name}'")
                continue
            if nesting_depth(value) > MAX_DEPTH:
                raise ParamsError(f"param '{each.name}' nests maps/arrays more than {MAX_DEPTH} levels deep")
            each.check(value)
            clean[each.name] = value
        return clean

    @classmethod
    def from_wire(cls: type[O], params: dict[str, Any], **bound: Any) -> O:
        """The op a client asked for (``bound``: ``local()`` values, e.g. the connection)."""
        clean = cls.validate(params)
        if cls.spread is not None:
            clean[cls.spread] = {key: clean.pop(key) for key in list(clean) if key not in cls.own}
        return cls(**clean, **bound)

    # ---- between nodes ------------------------------------------------------------------

    def for_forwarding(self) -> Op:
        """The value to send to another node (e.g. a send gets an idempotency key)."""
        return self

    def forward_form(self) -> tuple[str, str]:
        """(name, JSON text) for the ``requests`` table: ``{"v": version, "params": {...}}``."""
        if not self.forwardable:
            raise BadRequest(f"{self.op_name} must be sent to the node that runs the thread")
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if _LOCAL not in f.metadata}  # type: ignore[arg-type]
        try:
            text = orjson.dumps({"v": self.version, "params": values}).decode()
        except TypeError as exc:
            raise BadRequest(f"{self.op_name} cannot go to another node: {exc}") from exc
        return self.op_name, text


O = TypeVar("O", bound=Op)

OP_CLASSES: dict[str, type[Op]] = {}  # every op, wire and internal, by name


def from_forward(name: str, text: str) -> Op:
    """The op another node sent (``Op.forward_form``); a version this node does not speak is
    refused in words, so nodes of different releases fail clearly instead of guessing."""
    cls = OP_CLASSES.get(name)
    if cls is None:
        raise BadRequest(f"operation {name!r} from another node is unknown here: upgrade the nodes alike")
    data = orjson.loads(text)
    if not isinstance(data, dict) or data.get("v") != cls.version:
        got = data.get("v") if isinstance(data, dict) else None
        raise BadRequest(f"{name} version {got} from another node; this node speaks version {cls.version}: upgrade the nodes alike")
    return cls(**data["params"])


def op(
    name: str,
    where: Where,
    *,
    result: str = "",
    method: str | None = None,
    positional: tuple[str, ...] = (),
    example: dict[str, Any] | None = None,
    example_result: Any = None,
    notes: str = "",
    background: bool = False,
    wire: bool = True,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    version: int = 1,
    spread: tuple[str, tuple[Param, ...]] | None = None,
) -> Callable[[type[O]], type[O]]:
    """Make a class an operation: a frozen, keyword-only dataclass registered by ``name``.

    Its docstring's first paragraph is the summary the docs show. ``spread`` = (field,
    params): that dict field carries these wire params (``thread.create``'s config keys),
    so a param added to the tuple is an op param at once.
    """

    def make(cls: type[O]) -> type[O]:
        if name in OP_CLASSES:
            raise ValueError(f"operation {name!r} is defined twice")
        made = dataclasses.dataclass(frozen=True, kw_only=True, slots=True)(cls)
        fields = dataclasses.fields(made)  # type: ignore[arg-type]
        clashes = sorted(f.name for f in fields if f.name in Op.__annotations__)
        if clashes:
            raise ValueError(f"{name}: the field(s) {', '.join(clashes)} would hide the op's own description")
        own = tuple(Param(f.name, **f.metadata[_PARAM]) for f in fields if _PARAM in f.metadata)
        params = (*(spread[1] if spread else ()), *own)
        made.op_name = name
        made.where = where
        made.summary = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        made.params = params
        made.by_name = {p.name: p for p in params}
        made.own = frozenset(p.name for p in own)
        made.spread = spread[0] if spread else None
        made.result = result
        made.method = method
        made.positional = positional
        made.example_params = dict(example or {})
        made.example_result = example_result
        made.notes = notes
        made.background = background
        made.wire = wire
        made.timeout_s = timeout_s
        made.version = version
        made.forwardable = not any(_LOCAL in f.metadata for f in fields)
        OP_CLASSES[name] = made
        return made

    return make


def client_msg_id() -> str:
    """An idempotency key for a send that crosses nodes: run twice, it is delivered once."""
    return f"fwd-{secrets.token_hex(8)}"
