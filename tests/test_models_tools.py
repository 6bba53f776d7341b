"""Native tool calling through the scripted loopback server: tools offered, calls parsed,
the conversation continued with the call and its answer, the cache keyed by the tools."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from querybench.errors import ModelError
from querybench.models import (
    ChatRequest,
    Completion,
    Message,
    OpenAICompatibleModel,
    ResponseCache,
    RetryPolicy,
    Tool,
    ToolCall,
)
from querybench.models.truncate import fit_messages
from tests.openai_server import Reply, ScriptedServer

EXECUTE = Tool(
    "execute_sql",
    "Run one read-only SQL query and return its rows.",
    {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]},
)
QUESTION = (Message("system", "use the tool"), Message("user", "How many items?"))
REQUEST = ChatRequest(QUESTION, tools=(EXECUTE,), tool_choice="auto")


@pytest.fixture()
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def _complete(server: ScriptedServer, request: ChatRequest, **kw: object) -> Completion:
    async def go() -> Completion:
        model = OpenAICompatibleModel(
            "m",
            base_url=server.url,
            api_key="k",
            retry=RetryPolicy(max_retries=1, base=0.01),
            **kw,  # type: ignore[arg-type]
        )
        try:
            return await model.complete(request)
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_tools_are_sent_and_a_tool_call_reply_is_parsed(server: ScriptedServer) -> None:
    server.script([Reply("", tool_calls=(("execute_sql", '{"sql": "SELECT count(*) FROM t"}'),))])
    completion = _complete(server, REQUEST)
    body = server.requests[0]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "execute_sql",
                "parameters": EXECUTE.parameters,
                "description": EXECUTE.description,
            },
        }
    ]
    assert body["tool_choice"] == "auto"
    assert completion.finish_reason == "tool_calls"
    assert completion.text == ""
    (call,) = completion.tool_calls
    assert (call.id, call.name, call.error) == ("call_0", "execute_sql", None)
    assert call.arguments == {"sql": "SELECT count(*) FROM t"}
    assert call.raw == '{"sql": "SELECT count(*) FROM t"}'


def test_assistant_call_and_tool_answer_round_trip_in_the_history(server: ScriptedServer) -> None:
    server.script([Reply("", tool_calls=(("execute_sql", '{"sql": "SELECT 1"}'),))])
    first = _complete(server, REQUEST)
    call = first.tool_calls[0]
    history = (*QUESTION, first.as_message(), Message("tool", "[[1]]", tool_call_id=call.id))
    server.script([Reply("There is one item.")])
    second = _complete(server, ChatRequest(history, tools=(EXECUTE,)))
    assert second.text == "There is one item." and second.tool_calls == ()
    sent = server.requests[1]["messages"]
    assert sent[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "execute_sql", "arguments": '{"sql": "SELECT 1"}'},
            }
        ],
    }
    assert sent[3] == {"role": "tool", "content": "[[1]]", "tool_call_id": "call_0"}
    # plain messages are sent exactly as before tools existed (prompt hashes unchanged)
    assert sent[0] == {"role": "system", "content": "use the tool"}


def test_malformed_arguments_are_an_error_on_the_call_not_a_crash(server: ScriptedServer) -> None:
    server.script(
        [
            Reply(
                "",
                tool_calls=(
                    ("execute_sql", '{"sql": "SELECT 1"'),  # cut off
                    ("execute_sql", '["SELECT 1"]'),  # JSON, but not an object
                    ("execute_sql", '{"sql": "SELECT 2"}'),
                ),
            )
        ]
    )
    completion = _complete(server, REQUEST)
    bad, not_object, good = completion.tool_calls
    assert bad.arguments is None and bad.raw == '{"sql": "SELECT 1"'
    assert bad.error is not None and "not valid JSON" in bad.error and "execute_sql" in bad.error
    assert not_object.error == "arguments of 'execute_sql' are a JSON list, not an object"
    assert good.arguments == {"sql": "SELECT 2"} and good.error is None
    recorded = json.loads(json.dumps(completion.to_json()))
    assert "not valid JSON" in recorded["tool_calls"][0]["error"]


def test_tool_call_without_a_name_is_a_model_error(server: ScriptedServer) -> None:
    server.script([Reply("", tool_calls=(("", "{}"),))])
    with pytest.raises(ModelError, match="no function name"):
        _complete(server, REQUEST)


def test_cache_key_includes_tools_and_keeps_the_calls(
    server: ScriptedServer, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path)
    server.script([Reply("", tool_calls=(("execute_sql", '{"sql": "SELECT 1"}'),))])
    first = _complete(server, REQUEST, cache=cache)
    again = _complete(server, REQUEST, cache=cache)
    assert len(server.requests) == 1 and again.cached
    assert again.tool_calls == first.tool_calls
    other = Tool("list_tables", "List the tables.")
    _complete(server, ChatRequest(QUESTION, tools=(other,)), cache=cache)
    _complete(server, ChatRequest(QUESTION, tools=(EXECUTE,), tool_choice="required"), cache=cache)
    _complete(server, ChatRequest(QUESTION), cache=cache)
    assert len(server.requests) == 4


def test_truncation_drops_a_tool_call_with_its_answers() -> None:
    call = ToolCall.parse("c1", "execute_sql", '{"sql": "SELECT 1"}')
    messages = (
        Message("system", "s"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "word " * 50, tool_call_id="c1"),
        Message("user", "Question: q"),
    )
    kept, truncation = fit_messages(messages, 30, count=lambda t: len(t.split()))
    assert [m.role for m in kept] == ["system", "user"]
    assert truncation is not None and truncation.dropped_messages == 2


def test_arguments_nested_past_the_json_limit_are_an_error_not_a_crash() -> None:
    """A hostile model's tool call nests its arguments deeper than json can read."""
    call = ToolCall.parse("c1", "execute_sql", "[" * 100_000 + "]" * 100_000)
    assert call.arguments is None
    assert call.error is not None and "not valid JSON" in call.error
