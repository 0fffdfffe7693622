"""Every message we build with the Python constructors is valid against the v2 schema.

Client -> agent: requests, notifications and our answers to agent requests. Agent -> client:
the results, updates and permission requests our embedded agent sends.
"""

from __future__ import annotations

from typing import Any

import pytest
from _schema import assert_valid

from acp_notebook._protocol import (
    PROTOCOL_VERSION,
    AgentCapabilities,
    AgentMessage,
    AgentMessageChunk,
    AgentThought,
    AgentThoughtChunk,
    AuthMethodAgent,
    AuthMethodTerminal,
    AvailableCommandsUpdate,
    BackgroundTerminal,
    BackgroundToolCall,
    CancelRequestNotification,
    CancelSessionNotification,
    CancelTerminalRequest,
    CancelTerminalResponse,
    CancelToolCallRequest,
    CancelToolCallResponse,
    ClientAuthCapabilities,
    ClientCapabilities,
    CloseSessionRequest,
    CloseSessionResponse,
    Command,
    CommandPermissionSubject,
    CompactionSummaryChunk,
    CompactionUpdate,
    ConfigOptionUpdate,
    ContentToolCallContent,
    Cost,
    DeleteSessionRequest,
    DeleteSessionResponse,
    DiffAdd,
    DiffCopy,
    DiffDelete,
    DiffModify,
    DiffMove,
    DiffPatch,
    DiffToolCallContent,
    EmbeddedResource,
    EnvVariable,
    Error,
    ErrorCode,
    IdleStateUpdate,
    ImageContent,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoginAuthRequest,
    LoginAuthResponse,
    LogoutAuthRequest,
    LogoutAuthResponse,
    McpServerHttp,
    McpServerStdio,
    NewSessionRequest,
    NewSessionResponse,
    Notice,
    PermissionOption,
    PlanEntry,
    PlanItems,
    PlanUpdate,
    PromptCapabilities,
    PromptImageCapabilities,
    PromptRequest,
    PromptResponse,
    ReplayFromStart,
    RequestPermissionRequest,
    RequestPermissionResponse,
    RequiresActionStateUpdate,
    ResourceLink,
    ResumeSessionRequest,
    ResumeSessionResponse,
    RunningStateUpdate,
    SessionCapabilities,
    SessionConfigBoolean,
    SessionConfigSelect,
    SessionConfigSelectGroup,
    SessionConfigSelectOption,
    SessionInfo,
    SessionInfoUpdate,
    SessionNotFoundErrorData,
    SetSessionConfigOptionBooleanRequest,
    SetSessionConfigOptionIdRequest,
    SetSessionConfigOptionResponse,
    TerminalCancelCapabilities,
    TerminalCapabilities,
    TerminalExitStatus,
    TerminalOutput,
    TerminalOutputChunk,
    TerminalSize,
    TerminalToolCallContent,
    TerminalUpdate,
    TextCommandInput,
    TextContent,
    TextResourceContents,
    ToolCallCancelCapabilities,
    ToolCallCapabilities,
    ToolCallContentChunk,
    ToolCallFields,
    ToolCallLocation,
    ToolCallPermissionSubject,
    ToolCallUpdate,
    UnsupportedProtocolVersionErrorData,
    UpdateSessionNotification,
    UsageUpdate,
    UserMessage,
    UserMessageChunk,
    WireModel,
)

TEXT = TextContent(text="hello")
CWD = "/home/user/project"

SELECT = SessionConfigSelect(
    config_id="mode",
    name="Mode",
    category="mode",
    current_value="ask",
    options=[SessionConfigSelectOption(value="ask", name="Ask")],
)
GROUPED = SessionConfigSelect(
    config_id="model",
    name="Model",
    current_value="small",
    options=[
        SessionConfigSelectGroup(
            group_id="fast",
            name="Fast",
            options=[SessionConfigSelectOption(value="small", name="S")],
        )
    ],
)
BOOLEAN = SessionConfigBoolean(config_id="web", name="Web", current_value=True)
COMMAND = Command(name="web", description="Search", input=TextCommandInput(hint="query"))

CLIENT_SENDS: list[tuple[str, WireModel]] = [
    (
        "InitializeRequest",
        InitializeRequest(
            protocol_version=PROTOCOL_VERSION,
            info=Implementation(name="acp-notebook", title="ACP notebook", version="0.1.0"),
            capabilities=ClientCapabilities(auth=ClientAuthCapabilities()),
        ),
    ),
    (
        "InitializeRequest",
        InitializeRequest(
            protocol_version=PROTOCOL_VERSION, info=Implementation(name="c", version="1")
        ),
    ),
    ("LoginAuthRequest", LoginAuthRequest(method_id="agent-login")),
    ("LogoutAuthRequest", LogoutAuthRequest()),
    ("NewSessionRequest", NewSessionRequest(cwd=CWD)),
    (
        "NewSessionRequest",
        NewSessionRequest(
            cwd=CWD,
            additional_directories=["/home/user/lib"],
            mcp_servers=[
                McpServerStdio(
                    name="files",
                    command="/usr/bin/mcp-files",
                    args=["--root", CWD],
                    env=[EnvVariable(name="LOG", value="1")],
                ),
                McpServerHttp(name="web", url="https://mcp.example.com/"),
            ],
        ),
    ),
    ("ListSessionsRequest", ListSessionsRequest()),
    ("ListSessionsRequest", ListSessionsRequest(cwd=CWD, cursor="c2")),
    ("DeleteSessionRequest", DeleteSessionRequest(session_id="s1")),
    ("ResumeSessionRequest", ResumeSessionRequest(session_id="s1", cwd=CWD)),
    (
        "ResumeSessionRequest",
        ResumeSessionRequest(session_id="s1", cwd=CWD, replay_from=ReplayFromStart()),
    ),
    (
        "PromptRequest",
        PromptRequest(
            session_id="s1",
            prompt=[
                TEXT,
                ResourceLink(name="main.py", uri="file:///home/user/project/main.py"),
                ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
                EmbeddedResource(
                    resource=TextResourceContents(text="x = 1\n", uri="file:///p/a.py")
                ),
            ],
        ),
    ),
    ("CancelSessionNotification", CancelSessionNotification(session_id="s1")),
    ("CloseSessionRequest", CloseSessionRequest(session_id="s1")),
    (
        "SetSessionConfigOptionRequest",
        SetSessionConfigOptionIdRequest(session_id="s1", config_id="mode", value="code"),
    ),
    (
        "SetSessionConfigOptionRequest",
        SetSessionConfigOptionBooleanRequest(session_id="s1", config_id="web", value=False),
    ),
    ("CancelTerminalRequest", CancelTerminalRequest(session_id="s1", terminal_id="term_001")),
    ("CancelToolCallRequest", CancelToolCallRequest(session_id="s1", tool_call_id="call_001")),
    ("CancelRequestNotification", CancelRequestNotification(request_id=7)),
    ("CancelRequestNotification", CancelRequestNotification(request_id="req-7")),
    ("RequestPermissionResponse", RequestPermissionResponse.selected("allow")),
    ("RequestPermissionResponse", RequestPermissionResponse.cancelled()),
    ("Error", Error(code=ErrorCode.METHOD_NOT_FOUND, message="Method not found")),
]

AGENT_SENDS: list[tuple[str, WireModel]] = [
    (
        "InitializeResponse",
        InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            info=Implementation(name="acp-notebook-agent", version="0.1.0"),
            capabilities=AgentCapabilities(
                session=SessionCapabilities(
                    prompt=PromptCapabilities(image=PromptImageCapabilities())
                )
            ),
            auth_methods=[
                AuthMethodAgent(method_id="login", name="Log in"),
                AuthMethodTerminal(method_id="tui", name="Terminal login", args=["--login"]),
            ],
        ),
    ),
    ("LoginAuthResponse", LoginAuthResponse()),
    ("LogoutAuthResponse", LogoutAuthResponse()),
    (
        "NewSessionResponse",
        NewSessionResponse(
            session_id="s1",
            config_options=[SELECT, GROUPED, BOOLEAN],
            available_commands=[COMMAND],
        ),
    ),
    (
        "ListSessionsResponse",
        ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id="s1", cwd=CWD, title="Fix", updated_at="2026-10-08T12:00:00Z"
                )
            ],
            next_cursor="c2",
        ),
    ),
    ("DeleteSessionResponse", DeleteSessionResponse()),
    ("ResumeSessionResponse", ResumeSessionResponse()),
    ("CloseSessionResponse", CloseSessionResponse()),
    ("PromptResponse", PromptResponse(message_id="user-1")),
    ("SetSessionConfigOptionResponse", SetSessionConfigOptionResponse(config_options=[BOOLEAN])),
    ("CancelTerminalResponse", CancelTerminalResponse()),
    ("CancelToolCallResponse", CancelToolCallResponse()),
    (
        "Error",
        Error(
            code=ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
            message="Unsupported protocol version",
            data=UnsupportedProtocolVersionErrorData(requested=3, supported=[2]).to_wire(),
        ),
    ),
    (
        "Error",
        Error(
            code=ErrorCode.RESOURCE_NOT_FOUND,
            message="Session not found",
            data=SessionNotFoundErrorData(session_id="s9").to_wire(),
        ),
    ),
    (
        "RequestPermissionRequest",
        RequestPermissionRequest(
            session_id="s1",
            title="Run the test suite?",
            subject=CommandPermissionSubject(
                command="pytest -q", cwd=CWD, tool_call_id="call_001", terminal_id="term_001"
            ),
            options=[
                PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
                PermissionOption(option_id="always", name="Always", kind="allow_always"),
                PermissionOption(option_id="deny", name="Reject", kind="reject_once"),
            ],
        ),
    ),
    (
        "RequestPermissionRequest",
        RequestPermissionRequest(
            session_id="s1",
            title="Write notes.md?",
            description="Creates a new file.",
            subject=ToolCallPermissionSubject(
                tool_call=ToolCallFields(
                    tool_call_id="call_002",
                    title="Write notes.md",
                    kind="edit",
                    status="pending",
                    content=[DiffToolCallContent(changes=[DiffAdd(path="/p/notes.md")])],
                )
            ),
            options=[PermissionOption(option_id="allow", name="Allow", kind="allow_once")],
        ),
    ),
]

UPDATES_SENT: list[WireModel] = [
    UserMessageChunk(message_id="u1", content=TEXT),
    UserMessage(message_id="u1", content=[TEXT]),
    AgentMessageChunk(message_id="a1", content=TEXT),
    AgentMessage(message_id="a1", content=None),
    AgentThoughtChunk(message_id="t1", content=TEXT),
    AgentThought(message_id="t1", content=[TEXT]),
    RunningStateUpdate(),
    RunningStateUpdate(background=[BackgroundTerminal(terminal_id="term_001")]),
    RequiresActionStateUpdate(),
    IdleStateUpdate(stop_reason="end_turn"),
    IdleStateUpdate(stop_reason="cancelled", background=[BackgroundToolCall(tool_call_id="c")]),
    IdleStateUpdate(stop_reason="error", error=Error(code=-32603, message="boom")),
    IdleStateUpdate(stop_reason="_acp_notebook_crash"),
    IdleStateUpdate(),
    ToolCallUpdate(
        tool_call_id="call_001",
        title="Run pytest",
        kind="execute",
        status="in_progress",
        content=[
            ContentToolCallContent(content=TEXT),
            TerminalToolCallContent(terminal_id="term_001"),
            DiffToolCallContent(
                changes=[
                    DiffModify(path="/p/a.py", file_type="text", mime_type="text/x-python"),
                    DiffDelete(path="/p/b.py"),
                    DiffMove(old_path="/p/c.py", path="/p/d.py"),
                    DiffCopy(old_path="/p/e.py", path="/p/f.py"),
                ],
                patch=DiffPatch(format="git_patch", text="diff --git /p/a.py /p/a.py\n"),
            ),
        ],
        locations=[ToolCallLocation(path="/p/a.py", line=3)],
        raw_input={"command": "pytest"},
        capabilities=ToolCallCapabilities(cancel=ToolCallCancelCapabilities()),
    ),
    ToolCallUpdate(tool_call_id="call_001", status="completed", raw_output={"exit": 0}),
    ToolCallContentChunk(tool_call_id="call_001", content=ContentToolCallContent(content=TEXT)),
    TerminalUpdate(
        terminal_id="term_001",
        command="pytest -q",
        cwd=CWD,
        output=TerminalOutput(data="cGFzc2VkDQo="),
        size=TerminalSize(cols=80, rows=24),
        capabilities=TerminalCapabilities(cancel=TerminalCancelCapabilities()),
    ),
    TerminalUpdate(terminal_id="term_001", exit_status=TerminalExitStatus(exit_code=1)),
    TerminalUpdate(terminal_id="term_001", exit_status=TerminalExitStatus()),
    TerminalUpdate(terminal_id="term_001", exit_status=None, output=None),
    TerminalOutputChunk(terminal_id="term_001", data="cGFzc2VkDQo="),
    PlanUpdate(
        plan=PlanItems(
            plan_id="p1",
            entries=[PlanEntry(content="Write tests", priority="high", status="pending")],
        )
    ),
    AvailableCommandsUpdate(available_commands=[COMMAND]),
    ConfigOptionUpdate(config_options=[SELECT, BOOLEAN]),
    SessionInfoUpdate(title="Fix the parser"),
    SessionInfoUpdate(title=None),
    UsageUpdate(used=10, size=100, cost=Cost(amount=0.01, currency="USD")),
    Notice(severity="info", title="Context compacted"),
    CompactionUpdate(compaction_id="c1", status="in_progress"),
    CompactionSummaryChunk(compaction_id="c1", content=TEXT),
]


def _name(item: tuple[str, WireModel]) -> str:
    return f"{item[0]}-{type(item[1]).__name__}"


@pytest.mark.parametrize("item", CLIENT_SENDS + AGENT_SENDS, ids=_name)
def test_constructed_message_is_schema_valid(item: tuple[str, WireModel]) -> None:
    type_name, model = item
    wire = model.to_wire()
    assert_valid(type_name, wire)
    # and it parses back into an equal model
    assert type(model).from_wire(wire).to_wire() == wire


@pytest.mark.parametrize("update", UPDATES_SENT, ids=lambda u: type(u).__name__)
def test_constructed_update_is_schema_valid(update: WireModel) -> None:
    params = UpdateSessionNotification(session_id="s1", update=update).to_wire()  # type: ignore[arg-type]
    assert_valid("UpdateSessionNotification", params)
    assert params["update"]["sessionUpdate"] == update.to_wire()["sessionUpdate"]
    assert UpdateSessionNotification.from_wire(params).to_wire() == params


def test_tags_are_written_even_when_defaulted() -> None:
    wire: dict[str, Any] = IdleStateUpdate(stop_reason="end_turn").to_wire()
    assert wire == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
    assert TextContent(text="x").to_wire() == {"type": "text", "text": "x"}


def test_meta_is_written_as_underscore_meta() -> None:
    wire = TerminalOutputChunk(terminal_id="t", data="", meta={"seq": 1}).to_wire()
    assert wire["_meta"] == {"seq": 1}
    assert "meta" not in wire
