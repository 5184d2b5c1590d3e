from __future__ import annotations

import importlib_metadata

from clawcore.plugins import get_plugin_manager


def test_entry_point_is_found_and_loads_all_ten_hooks() -> None:
    names = {ep.name: ep for ep in importlib_metadata.entry_points(group="clawcore")}
    assert "prism" in names and names["prism"].value == "clawcore_prism"
    pm = get_plugin_manager()
    plugin = pm.get_plugin("prism")
    assert plugin is not None
    hooks = {caller.name for caller in pm.get_hookcallers(plugin) or ()}
    ten = {"message_received", "before_prompt_build", "before_tool_call", "after_tool_call", "tool_result_persist",
           "before_message_write", "message_sending", "subagent_spawning", "session_end", "gateway_start"}
    assert ten <= hooks
    assert {"config_schema", "register_commands"} <= hooks
