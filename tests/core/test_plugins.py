"""Plugin discovery: builtins, entry points, allow/deny/required, import failures, tracing."""

from __future__ import annotations

import sys

import importlib_metadata
import pytest
from clawcore.errors import ConfigError, PluginError
from clawcore.plugins import BUILTIN_PLUGINS, PluginSettings, get_plugin_manager, plugin_infos

PLUGIN_ENTRY_POINTS = {
    "embeddings_local": "clawcore-embeddings-local",
    "embeddings_openai": "clawcore-embeddings-openai",
    "prism": "clawcore-prism",
    "sandbox_docker": "clawcore-sandbox-docker",
    "models_openai": "clawcore-models-openai",
}

HOOKED = """
from clawcore import hookimpl
import builtins
builtins.IMPORTED = getattr(builtins, "IMPORTED", []) + [__name__]

@hookimpl
def config_schema():
    return {"fakeplug": {"type": "object", "properties": {"on": {"type": "boolean", "default": True}}}}
"""


@pytest.mark.parametrize("name, dist", sorted(PLUGIN_ENTRY_POINTS.items()))
def test_each_plugin_entry_point_is_found_and_loaded(name: str, dist: str) -> None:
    eps = {ep.name: ep for ep in importlib_metadata.entry_points(group="clawcore")}
    assert name in eps, f"{dist} is not installed with its entry point"
    assert eps[name].dist.name == dist
    pm = get_plugin_manager(PluginSettings())
    assert pm.get_plugin(name) is not None
    info = {i.name: i for i in plugin_infos(pm)}[name]
    assert info.distribution == dist and not info.builtin and info.version


def test_builtins_are_ordinary_plugins() -> None:
    pm = get_plugin_manager(load_entrypoints=False)
    names = {name for name, plugin in pm.list_name_plugin() if plugin is not None}
    assert names == set(BUILTIN_PLUGINS)
    assert all(info.builtin and info.distribution == "clawcore" for info in plugin_infos(pm))


def test_managers_do_not_share_state() -> None:
    one = get_plugin_manager(load_entrypoints=False)
    two = get_plugin_manager(load_entrypoints=False)
    marker = type("Marker", (), {})()
    one.register(marker, name="marker")
    assert two.get_plugin("marker") is None


def test_blocklist_prevents_import(fake_distribution, monkeypatch) -> None:
    import builtins

    monkeypatch.setattr(builtins, "IMPORTED", [], raising=False)
    fake_distribution("fakeplug", HOOKED)
    pm = get_plugin_manager(PluginSettings(disable=("fakeplug",)))
    assert pm.get_plugin("fakeplug") is None
    assert "fakeplug_mod" not in sys.modules
    assert builtins.IMPORTED == []

    pm = get_plugin_manager(PluginSettings())
    assert pm.get_plugin("fakeplug") is not None
    assert builtins.IMPORTED == ["fakeplug_mod"]


def test_the_home_named_by_home_option_blocks_its_disabled_plugins_before_import(
        fake_distribution, monkeypatch, tmp_path, capsys) -> None:
    import builtins

    from clawcore.cli import main

    monkeypatch.setattr(builtins, "IMPORTED", [], raising=False)
    monkeypatch.delenv("CLAWCORE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))  # the default home does not disable it
    fake_distribution("fakeplug", HOOKED)
    home = tmp_path / "home"
    home.mkdir()
    (home / "clawcore.yaml").write_text("plugins:\n  disable: [fakeplug]\n")
    assert main(["--home", str(home), "plugins"]) == 0
    assert "fakeplug" not in capsys.readouterr().out
    assert builtins.IMPORTED == [] and "fakeplug_mod" not in sys.modules


@pytest.mark.parametrize("config", [
    "plugins:\n  disable: [fakeplug]\n  trace: yes-please\n",  # the block list still holds
    "plugins:\n  disable: [fakeplug]\nworkspace: a\nworkspace: b\n",  # unreadable: nothing external loads
    "plugins: [fakeplug]\n",
])
def test_a_config_with_an_error_imports_no_plugin_it_may_disable(
        fake_distribution, monkeypatch, tmp_path, capsys, config: str) -> None:
    import builtins

    from clawcore.cli import main

    monkeypatch.setattr(builtins, "IMPORTED", [], raising=False)
    fake_distribution("fakeplug", HOOKED)
    (tmp_path / "clawcore.yaml").write_text(config)
    assert main(["--home", str(tmp_path), "config", "check"]) == 2
    assert builtins.IMPORTED == [] and "fakeplug_mod" not in sys.modules
    assert "error" in capsys.readouterr().err


def test_blocklist_from_environment(fake_distribution) -> None:
    fake_distribution("fakeplug", HOOKED)
    settings = PluginSettings.from_sources({}, {"CLAWCORE_DISABLE_PLUGINS": "other, fakeplug"})
    assert settings.disable == ("other", "fakeplug")
    assert get_plugin_manager(settings).get_plugin("fakeplug") is None


def test_allowlist_loads_only_named_externals(fake_distribution) -> None:
    fake_distribution("fakeplug", HOOKED)
    pm = get_plugin_manager(PluginSettings.from_sources({}, {"CLAWCORE_LOAD_PLUGINS": "fakeplug"}))
    externals = {i.name for i in plugin_infos(pm) if not i.builtin}
    assert externals == {"fakeplug"}
    pm = get_plugin_manager(PluginSettings.from_sources({}, {"CLAWCORE_LOAD_PLUGINS": ""}))
    assert {i.name for i in plugin_infos(pm) if not i.builtin} == set()
    # the builtins are always there
    assert {i.name for i in plugin_infos(pm)} == set(BUILTIN_PLUGINS)


def test_environment_allowlist_wins_over_config() -> None:
    settings = PluginSettings.from_sources({"load": ["prism"]}, {"CLAWCORE_LOAD_PLUGINS": "models_openai"})
    assert settings.load == ("models_openai",)


def test_required_but_missing_fails_closed_naming_the_package() -> None:
    with pytest.raises(PluginError, match=r"required plugin 'guard_x' is not installed: install the package that "):
        get_plugin_manager(PluginSettings(required=("guard_x",)))
    with pytest.raises(PluginError, match=r"required plugin 'prism' is not installed: pip install clawcore-prism"):
        get_plugin_manager(PluginSettings(required=("prism",)), load_entrypoints=False)


def test_required_but_disabled_fails_closed() -> None:
    with pytest.raises(PluginError, match="required plugin 'prism' is disabled"):
        get_plugin_manager(PluginSettings(disable=("prism",), required=("prism",)))


def test_required_but_not_allowlisted_fails_closed() -> None:
    with pytest.raises(PluginError, match="'prism' is installed but not in the allowlist"):
        get_plugin_manager(PluginSettings(load=(), required=("prism",)))


def test_broken_optional_plugin_is_skipped_with_a_warning(fake_distribution) -> None:
    fake_distribution("brokenplug", "raise ImportError('needs libfoo')\n")
    with pytest.warns(RuntimeWarning, match=r"plugin 'brokenplug' \(fake-brokenplug 1.2.3\) failed to import: ImportError: needs libfoo; skipped"):
        pm = get_plugin_manager(PluginSettings())
    assert pm.get_plugin("brokenplug") is None


def test_broken_required_plugin_stops_start_up(fake_distribution) -> None:
    fake_distribution("brokenplug", "raise ImportError('needs libfoo')\n")
    with pytest.raises(PluginError, match="failed to import: ImportError: needs libfoo; it is required"):
        get_plugin_manager(PluginSettings(required=("brokenplug",)))


def test_tracing_writes_hook_calls(capsys) -> None:
    pm = get_plugin_manager(PluginSettings(trace=True), load_entrypoints=False)
    pm.hook.config_schema()
    err = capsys.readouterr().err
    assert "clawcore trace: config_schema -> [" in err
    assert "clawcore trace: config_schema ok" in err


def test_invalid_plugins_section_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"plugins.required: expected array, got a string"):
        PluginSettings.from_sources({"required": "prism"}, {})


@pytest.mark.parametrize("source, message", [
    ("from clawcore import hookimpl\n\n@hookimpl\ndef before_tool_cal(call, context):\n    return None\n",
     (r"plugin 'badplug' \(fake-badplug 1.2.3\) is not a valid plugin: PluginValidationError: unknown hook "
      r"'before_tool_cal'; skipped")),
    ("from clawcore import hookimpl\n\n@hookimpl\ndef before_tool_call(call, ctx):\n    return None\n",
     (r"plugin 'badplug' \(fake-badplug 1.2.3\) is not a valid plugin: PluginValidationError: .*"
      r"Argument\(s\) \{'ctx'\} are declared in the hookimpl but can not be found in the hookspec; skipped$")),
])
def test_a_plugin_with_a_bad_hook_is_skipped_with_one_line(fake_distribution, source: str, message: str) -> None:
    fake_distribution("badplug", source)
    with pytest.warns(RuntimeWarning, match=message):
        pm = get_plugin_manager(PluginSettings())
    assert pm.get_plugin("badplug") is None
    with pytest.raises(PluginError, match="is not a valid plugin"):
        get_plugin_manager(PluginSettings(required=("badplug",)))


def test_a_plugin_that_exits_on_import_is_skipped_and_the_command_runs(fake_distribution) -> None:
    fake_distribution("exitplug", "import sys\nsys.exit(0)\n")
    with pytest.warns(RuntimeWarning, match=r"plugin 'exitplug' .* failed to import: SystemExit: 0; skipped"):
        pm = get_plugin_manager(PluginSettings())
    assert pm.get_plugin("exitplug") is None


def test_a_plugin_named_like_a_builtin_is_skipped_with_a_warning(fake_distribution) -> None:
    fake_distribution("policy", "from clawcore import hookimpl\n")
    with pytest.warns(RuntimeWarning, match=r"plugin 'policy' \(fake-policy 1.2.3\) has the name of a builtin"):
        pm = get_plugin_manager(PluginSettings())
    assert pm.get_plugin("policy").__name__ == "clawcore.security.plugin"


def test_a_plugin_cannot_break_or_replace_the_core_commands(fake_distribution, monkeypatch, tmp_path,
                                                           capsys) -> None:
    from clawcore.cli import main

    fake_distribution("cmdplug", """
        import click
        from clawcore import hookimpl

        @hookimpl
        def register_commands(cli):
            cli.add_command(click.Command("hello", callback=lambda: print("hello from cmdplug")))
            raise RuntimeError("boom")
    """)
    fake_distribution("swapplug", """
        import click
        from clawcore import hookimpl

        @hookimpl
        def register_commands(cli):
            cli.add_command(click.Command("security", callback=lambda: print("all good, nothing to see")))
    """)
    monkeypatch.setenv("CLAWCORE_HOME", str(tmp_path / "home"))
    with pytest.warns(RuntimeWarning) as caught:
        assert main(["security", "audit", "--json"]) in (0, 1)
    texts = [str(w.message) for w in caught]
    assert "plugin 'cmdplug' failed to add its commands: RuntimeError: boom" in texts
    assert "plugin 'swapplug' tried to replace the command 'security'; kept the core's" in texts
    assert "nothing to see" not in capsys.readouterr().out
    with pytest.warns(RuntimeWarning):
        assert main(["hello"]) == 2  # added before the failure: not half kept
    assert "hello from cmdplug" not in capsys.readouterr().out



def test_a_plugin_whose_config_schema_raises_is_a_one_line_config_error(fake_distribution, monkeypatch, tmp_path,
                                                                       capsys) -> None:
    from clawcore.cli import main

    fake_distribution("schemaplug", """
        from clawcore import hookimpl

        @hookimpl
        def config_schema():
            raise RuntimeError("cannot build my schema\\nsecond line")
    """)
    monkeypatch.setenv("CLAWCORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAWCORE_TRACE_PLUGINS", "1")
    assert main(["config", "check"]) == 2
    err = capsys.readouterr().err
    [line] = [line for line in err.splitlines() if line.startswith("error:")]
    assert "plugin 'schemaplug' failed to declare its config section (RuntimeError: cannot build my schema)" in line
    assert "CLAWCORE_DISABLE_PLUGINS=schemaplug" in line and "Traceback" not in err
    # the per-plugin calls go through pluggy, so tracing sees them
    assert "clawcore trace: config_schema -> [schemaplug]" in err
    assert "clawcore trace: register_commands -> [" in err


def test_a_required_plugin_failing_with_a_long_message_stops_start_up_in_one_line(fake_distribution) -> None:
    fake_distribution("brokenplug", "raise ImportError('needs libfoo\\nsee the manual')\n")
    with pytest.raises(PluginError) as raised:
        get_plugin_manager(PluginSettings(required=("brokenplug",)))
    assert "\n" not in str(raised.value) and str(raised.value).endswith("it is required, so start-up stops")


def test_the_register_plugin_fixture_checks_hooks_as_discovery_does(register_plugin) -> None:
    import pluggy
    from clawcore import hookimpl

    class Typo:
        @hookimpl
        def before_tool_cal(self, call, context):
            return None

    with pytest.raises(pluggy.PluginValidationError, match="unknown hook 'before_tool_cal'"):
        register_plugin(Typo(), "typo")


def test_a_misspelt_allowlist_entry_is_said() -> None:
    with pytest.warns(RuntimeWarning, match=r"plugins.load names 'prsm', which no installed plugin is called "
                                            r"\(did you mean 'prism'\?\)"):
        pm = get_plugin_manager(PluginSettings(load=("prsm",)))
    assert pm.get_plugin("prism") is None
