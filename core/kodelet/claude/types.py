"""Hook inputs and outputs as Claude Code puts them on the wire.

Inputs are snake_case on the wire and keep every field they do not know in
``extra``: Claude Code adds input fields often, and a hook written for a newer
version must still see them. Outputs are camelCase on the wire (``stopReason``,
``hookSpecificOutput``); their Python attributes are snake_case. Callbacks written
for the Agent SDK spell ``continue_`` and ``async_``; both spellings are read.

Inputs and outputs go through kodelet's one strict converter (:mod:`kodelet.wire`),
with the outputs' camelCase names in its one rename table: a hook that
prints ``{"continue": "no"}`` has failed, with an error naming ``output.continue``,
rather than been coerced into something its author never meant.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeVar, Union

import attrs

from ..wire import WireError, converter, structure, wire_name
from .events import EVENTS, HookEvent

T = TypeVar("T")

PermissionDecision = Literal["allow", "deny", "ask", "defer"]


class HookDataError(WireError):
    """An input or output did not match Claude Code's shape; the message names the field."""


def _camel_case(cls: type, fields: list[attrs.Attribute[Any]]) -> list[attrs.Attribute[Any]]:
    """Outputs are camelCase on the wire (``stop_reason`` is ``stopReason``, ``continue_``
    is ``continue``): each field's wire name, unless it names its own, goes into the
    converter's one rename table (:func:`kodelet.wire.wire_name`)."""
    out = []
    for a in fields:
        head, *rest = a.name.rstrip("_").split("_")
        camel = head + "".join(part.capitalize() for part in rest)
        out.append(a.evolve(metadata={"wire": camel, **a.metadata}))
    return out


def _keep_null() -> dict[str, bool]:
    return {"keep_null": True}


# --- inputs ---------------------------------------------------------------


@attrs.frozen(kw_only=True)
class HookInput:
    """The fields every event's input carries (Claude Code's ``BaseHookInput``)."""

    EVENT: ClassVar[HookEvent]

    session_id: str = ""
    transcript_path: str = ""
    cwd: str = ""
    permission_mode: str = "default"
    extra: dict[str, Any] = attrs.field(factory=dict)
    """Fields this version does not know, passed on to hooks unchanged."""

    @property
    def event(self) -> HookEvent:
        return self.EVENT


@attrs.frozen(kw_only=True)
class _ToolFields(HookInput):
    tool_name: str
    tool_input: dict[str, Any] = attrs.field(factory=dict)
    agent_id: str | None = None
    agent_type: str | None = None


@attrs.frozen(kw_only=True)
class PreToolUseInput(_ToolFields):
    EVENT: ClassVar[HookEvent] = HookEvent.PRE_TOOL_USE
    tool_use_id: str = ""


@attrs.frozen(kw_only=True)
class PreSkillShellCommandInput(_ToolFields):
    """A skill's or slash command's shell line (``!`cmd```), before Claude Code runs it:
    ``tool_name`` is the shell (``Bash`` or ``PowerShell``), ``tool_input.command`` the
    line with its arguments filled in."""

    EVENT: ClassVar[HookEvent] = HookEvent.PRE_SKILL_SHELL_COMMAND
    tool_use_id: str = ""
    """Names this line; no tool call in the transcript has it."""
    command_name: str = ""
    """The skill or command whose text holds the line."""
    command_source: str | None = None
    """Where that skill or command comes from (``projectSettings``, ``plugin``, ...)."""
    invoked_by: str = "other"
    """Who loaded it: ``user``, ``claude`` (the Skill tool) or ``other``."""


@attrs.frozen(kw_only=True)
class PostToolUseInput(_ToolFields):
    EVENT: ClassVar[HookEvent] = HookEvent.POST_TOOL_USE
    tool_response: Any = attrs.field(default=None, metadata=_keep_null())
    tool_use_id: str = ""


@attrs.frozen(kw_only=True)
class PostToolUseFailureInput(_ToolFields):
    EVENT: ClassVar[HookEvent] = HookEvent.POST_TOOL_USE_FAILURE
    tool_use_id: str = ""
    error: str = ""
    is_interrupt: bool | None = None


@attrs.frozen(kw_only=True)
class PermissionRequestInput(_ToolFields):
    EVENT: ClassVar[HookEvent] = HookEvent.PERMISSION_REQUEST
    permission_suggestions: list[Any] | None = None


@attrs.frozen(kw_only=True)
class UserPromptSubmitInput(HookInput):
    EVENT: ClassVar[HookEvent] = HookEvent.USER_PROMPT_SUBMIT
    prompt: str


@attrs.frozen(kw_only=True)
class StopInput(HookInput):
    EVENT: ClassVar[HookEvent] = HookEvent.STOP
    stop_hook_active: bool = False
    last_assistant_message: str | None = None


@attrs.frozen(kw_only=True)
class SubagentStopInput(HookInput):
    EVENT: ClassVar[HookEvent] = HookEvent.SUBAGENT_STOP
    stop_hook_active: bool = False
    agent_id: str = ""
    agent_type: str = ""
    agent_transcript_path: str = ""
    last_assistant_message: str | None = None


@attrs.frozen(kw_only=True)
class SubagentStartInput(HookInput):
    EVENT: ClassVar[HookEvent] = HookEvent.SUBAGENT_START
    agent_id: str = ""
    agent_type: str = ""


@attrs.frozen(kw_only=True)
class PreCompactInput(HookInput):
    EVENT: ClassVar[HookEvent] = HookEvent.PRE_COMPACT
    trigger: str = "auto"
    custom_instructions: str | None = attrs.field(default=None, metadata=_keep_null())


@attrs.frozen(kw_only=True)
class NotificationInput(HookInput):
    EVENT: ClassVar[HookEvent] = HookEvent.NOTIFICATION
    message: str = ""
    title: str | None = None
    notification_type: str = ""


@attrs.frozen(kw_only=True)
class SessionStartInput(HookInput):
    EVENT: ClassVar[HookEvent] = HookEvent.SESSION_START
    source: str = "startup"
    model: str | None = None
    agent_type: str | None = None


@attrs.frozen(kw_only=True)
class SessionEndInput(HookInput):
    EVENT: ClassVar[HookEvent] = HookEvent.SESSION_END
    reason: str = "other"


@attrs.frozen(kw_only=True)
class SetupInput(HookInput):
    EVENT: ClassVar[HookEvent] = HookEvent.SETUP
    trigger: str = "init"


@attrs.frozen(kw_only=True)
class TeammateIdleInput(HookInput):
    EVENT: ClassVar[HookEvent] = HookEvent.TEAMMATE_IDLE
    teammate_name: str = ""
    team_name: str = ""


@attrs.frozen(kw_only=True)
class TaskCompletedInput(HookInput):
    EVENT: ClassVar[HookEvent] = HookEvent.TASK_COMPLETED
    task_id: str = ""
    task_subject: str = ""
    task_description: str | None = None
    teammate_name: str | None = None
    team_name: str | None = None


INPUT_TYPES: dict[HookEvent, type[HookInput]] = {
    cls.EVENT: cls
    for cls in (
        PreToolUseInput,
        PreSkillShellCommandInput,
        PostToolUseInput,
        PostToolUseFailureInput,
        PermissionRequestInput,
        UserPromptSubmitInput,
        StopInput,
        SubagentStopInput,
        SubagentStartInput,
        PreCompactInput,
        NotificationInput,
        SessionStartInput,
        SessionEndInput,
        SetupInput,
        TeammateIdleInput,
        TaskCompletedInput,
    )
}


# --- outputs --------------------------------------------------------------


@attrs.frozen(kw_only=True, field_transformer=_camel_case)
class PreToolUseSpecificOutput:
    hook_event_name: HookEvent = HookEvent.PRE_TOOL_USE
    permission_decision: PermissionDecision | None = None
    permission_decision_reason: str | None = None
    updated_input: dict[str, Any] | None = None
    additional_context: str | None = None


@attrs.frozen(kw_only=True, field_transformer=_camel_case)
class PostToolUseSpecificOutput:
    hook_event_name: HookEvent = HookEvent.POST_TOOL_USE
    additional_context: str | None = None
    updated_mcp_tool_output: Any = attrs.field(
        default=None, metadata={"wire": "updatedMCPToolOutput"}
    )
    updated_tool_output: Any = None


@attrs.frozen(kw_only=True, field_transformer=_camel_case)
class AdditionalContextOutput:
    """The specific output of the events whose only specific field is additionalContext."""

    hook_event_name: HookEvent
    additional_context: str | None = None


@attrs.frozen(kw_only=True, field_transformer=_camel_case)
class PermissionRequestDecision:
    behavior: Literal["allow", "deny"]
    updated_input: dict[str, Any] | None = None
    updated_permissions: list[Any] | None = None
    message: str | None = None
    interrupt: bool | None = None


@attrs.frozen(kw_only=True, field_transformer=_camel_case)
class PermissionRequestSpecificOutput:
    hook_event_name: HookEvent = HookEvent.PERMISSION_REQUEST
    decision: PermissionRequestDecision | None = None


SpecificOutput = Union[  # noqa: UP007 - a runtime value, used by isinstance
    PreToolUseSpecificOutput,
    PostToolUseSpecificOutput,
    AdditionalContextOutput,
    PermissionRequestSpecificOutput,
]

_SPECIFIC_TYPES: dict[HookEvent, type[Any]] = {
    HookEvent.PRE_TOOL_USE: PreToolUseSpecificOutput,
    HookEvent.PRE_SKILL_SHELL_COMMAND: PreToolUseSpecificOutput,
    HookEvent.POST_TOOL_USE: PostToolUseSpecificOutput,
    HookEvent.PERMISSION_REQUEST: PermissionRequestSpecificOutput,
}


@attrs.frozen(kw_only=True, field_transformer=_camel_case)
class SyncOutput:
    """What a hook answers when it is done (Claude Code's ``SyncHookJSONOutput``)."""

    continue_: bool | None = None
    suppress_output: bool | None = None
    stop_reason: str | None = None
    decision: Literal["approve", "block"] | None = None
    system_message: str | None = None
    reason: str | None = None
    hook_specific_output: SpecificOutput | None = attrs.field(
        default=None, metadata={"read_apart": True}
    )
    """Read by :func:`output_from_wire` itself, which knows the event."""


@attrs.frozen(kw_only=True, field_transformer=_camel_case)
class AsyncOutput:
    """ "Go on without me": the hook finishes in the background (``AsyncHookJSONOutput``)."""

    async_: Literal[True] = True
    async_timeout: float | None = None
    """Milliseconds the runner waits for the late result."""


HookOutput = SyncOutput | AsyncOutput


def _structure(data: Mapping[str, Any], cls: type[T], what: str) -> T:
    return structure(data, cls, what, error=HookDataError)


def _mapping(data: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise HookDataError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return data


# --- inputs on the wire ---------------------------------------------------


def input_from_wire(event: HookEvent, data: Any, what: str = "input") -> HookInput:
    """Build the event's input from wire JSON; unknown fields land in ``extra``."""
    data = _mapping(data, what)
    given = data.get("hook_event_name")
    if given is not None and given != event.value:
        raise HookDataError(f"{what}.hook_event_name: input is for {given!r}, not {event.value!r}")
    cls = INPUT_TYPES[event]
    names = {a.name for a in attrs.fields(cls)} - {"extra"}
    known = {k: v for k, v in data.items() if k in names}
    extra = {k: v for k, v in data.items() if k not in names and k != "hook_event_name"}
    return attrs.evolve(_structure(known, cls, what), extra=extra)


def input_to_wire(hook_input: HookInput) -> dict[str, Any]:
    """The JSON a hook reads: ``hook_event_name`` included, unset optional fields left out,
    unknown fields passed on (a known field always wins over an extra of the same name)."""
    data: dict[str, Any] = {}
    for a in attrs.fields(type(hook_input)):
        if a.name == "extra":
            continue
        value = getattr(hook_input, a.name)
        if value is None and not a.metadata.get("keep_null"):
            continue
        data[a.name] = converter.unstructure(value)
        if a.name == "permission_mode":
            data["hook_event_name"] = hook_input.event.value
    for key, value in hook_input.extra.items():
        data.setdefault(key, value)
    return data


# --- outputs on the wire --------------------------------------------------

_SPELLINGS = {"continue_": "continue", "async_": "async"}
_SYNC_KEYS = {wire_name(a) for a in attrs.fields(SyncOutput)}


def _specific_from_wire(
    event: HookEvent, data: Any, what: str, ignored: list[str]
) -> SpecificOutput:
    data = dict(_mapping(data, what))
    info = EVENTS[event]
    if not info.specific_output:
        raise HookDataError(f"{what}: {event.value} hooks have no hook-specific output")
    named = data.pop("hookEventName", event.value)
    if named != event.value:
        raise HookDataError(f"{what}.hookEventName: expected {event.value!r}, got {named!r}")
    known = {k: v for k, v in data.items() if k in info.specific_output}
    ignored.extend(f"{what}.{k}" for k in data if k not in info.specific_output)
    cls = _SPECIFIC_TYPES.get(event, AdditionalContextOutput)
    result: SpecificOutput = _structure(known | {"hookEventName": event.value}, cls, what)
    return result


def output_from_wire(
    event: HookEvent, data: Any, what: str = "output"
) -> tuple[HookOutput, list[str]]:
    """Read one hook's output for ``event``: the output and the paths of keys it ignored.

    Unknown keys are ignored, as Claude Code ignores them, but named so a typo in a
    guard (``permissiondecision``) shows up instead of silently allowing the call.
    """
    raw = _mapping(data, what)
    fields: dict[str, Any] = {}
    for key, value in raw.items():
        wire = _SPELLINGS.get(key, key)
        if wire in fields and key != wire:
            continue  # "continue" and "continue_" both given: the wire spelling wins
        fields[wire] = value
    ignored: list[str] = []
    if "async" in fields:
        if fields["async"] is not True:
            raise HookDataError(f"{what}.async: expected true")
        ignored.extend(f"{what}.{k}" for k in fields if k not in ("async", "asyncTimeout"))
        timeout = {k: v for k, v in fields.items() if k == "asyncTimeout"}
        return _structure(timeout, AsyncOutput, what), ignored
    specific_raw = fields.pop("hookSpecificOutput", None)
    ignored.extend(f"{what}.{k}" for k in fields if k not in _SYNC_KEYS)
    known = {k: v for k, v in fields.items() if k in _SYNC_KEYS}
    output = _structure(known, SyncOutput, what)
    if specific_raw is not None:
        specific = _specific_from_wire(event, specific_raw, f"{what}.hookSpecificOutput", ignored)
        output = attrs.evolve(output, hook_specific_output=specific)
    return output, ignored


def _unstructure(obj: Any) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for a in attrs.fields(type(obj)):
        value = getattr(obj, a.name)
        if value is None:
            continue
        if attrs.has(type(value)):
            value = _unstructure(value)
        elif isinstance(value, HookEvent):
            value = value.value
        data[wire_name(a)] = converter.unstructure(value)
    return data


def output_to_wire(output: HookOutput | SpecificOutput) -> dict[str, Any]:
    """Claude Code's JSON for an output: wire spellings, unset fields left out."""
    return _unstructure(output)
