"""Configuration: malformed files give one line per problem with the key path, exit status 2."""

from __future__ import annotations

import pytest
from clawcore.cli import main
from clawcore.config import load_config, parse_duration, parse_size
from clawcore.errors import ConfigError

MALFORMED = [
    ("sandbox: [1, 2\n", "line 2, column 1: invalid YAML"),
    ("- a\n- b\n", "the top level must be a mapping of sections, not a list"),
    ("memroy: {}\n", "memroy: unknown key (did you mean 'memory'?)"),
    ("sandbox:\n  backnd: docker\n", "sandbox.backnd: unknown key (did you mean 'backend'?)"),
    ("plugins:\n  requried: [prism]\n", "plugins.requried: unknown key (did you mean 'required'?)"),
    ("plugins:\n  required: prism\n", "plugins.required: expected array, got a string 'prism'"),
    ("plugins:\n  load: 3\n", "plugins.load: expected array or null, got a number 3"),
    ("plugins:\n  trace: 'yes'\n", "plugins.trace: expected boolean, got a string 'yes'"),
    ("workspace: 5\n", "workspace: expected string, got a number 5"),
    ("timezone: [Europe/Paris]\n", "timezone: expected string or null, got a list"),
    ("sandbox: local\n", "sandbox: expected object, got a string 'local'"),
    ("agent:\n", "agent: expected object, got nothing (the key has no value)"),
    ("sandbox:\n  maxOutput: -1\n", "sandbox.maxOutput: -1 is not a size like 512m"),
    ("memory:\n  search: {minScore: .nan}\n", "memory.search.minScore: .nan is not a number"),
    ("memory:\n  search: {weights: {text: .inf}}\n", "memory.search.weights.text: .inf is not a finite number"),
    ("models:\n  openai: {baseUrl: 'https://bob:hunter2hunter2@llm.example.com/v1'}\n",
     "carries a user name or password before the host"),
    ("memory:\n  search: {weights: {text: 1.0e+308}}\n", "memory.search.weights.text: 1e+308 is out of range"),
    ("models:\n  openai: {apiKey: '${OPENAI_API_KEY}'}\n",
     "models.openai.apiKey: ${OPENAI_API_KEY} would be used as written: the config expands no environment variables"),
    ("auth:\n  token: '${TOKEN:-ghp_N6VEq8ZtR2mK9pLw3zXc7vB1nY4hJ6dF0sA5}'\n", "auth.token: ${TOKEN} would be used"),
    ("memory:\n  search: {weights: {text: 0, vector: 0.0}}\n",
     "memory.search.weights: {'text': 0, 'vector': 0.0} gives both searches a weight of 0; at least one must count"),
    ("memory:\n  chunking: {tokens: 8}\n", "memory.chunking.tokens: 8 is out of range: it must be at least 16"),
    ("memory:\n  chunking: {tokens: 600.0}\n", "memory.chunking.tokens: expected integer, got a number 600.0"),
    ("sandbox:\n  docker:\n    memoryLimit: 512x\n", "sandbox.docker.memoryLimit: '512x' is not a size like 512m"),
    ("sandbox:\n  docker:\n    timeout: soon\n", "sandbox.docker.timeout: 'soon' is not a duration above 0 like 30s"),
    ("key: value\n\tbad: tab\n", "invalid YAML"),
    ("sandbox:\n  timeout: -3\n", "sandbox.timeout: -3 is not a duration above 0 like 30s"),
    ("models:\n  openai: {timeout: 1000000000000}\n", "models.openai.timeout: 1000000000000 is longer than a year"),
    ("timezone: Mars/Olympus\n", "timezone: 'Mars/Olympus' is not a known IANA zone like Europe/Berlin"),
    ("memory:\n  chunking: {overlap: 700}\n", "memory.chunking: overlap (700) must be below tokens (600)"),
    ("tools: &a {policy: {profile: coding}, x: *a}\n", "invalid YAML: an alias refers to a value that contains it"),
    (("a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
      "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"),
     "invalid YAML: aliases expand it to more than 100000 values"),
    ("sandbox: {}\nsandbox: {timeout: 5s}\n", "line 2, column 1: invalid YAML: the key 'sandbox' is given twice"),
    ("auth:\n  token: [ghp_N6VEq8ZtR2mK9pLw3zXc7vB1nY4hJ6dF0sA5]\n",
     "auth.token: expected string or null, got a list (a secret: not shown)"),
]


@pytest.mark.parametrize("text, expected", MALFORMED, ids=[m[1][:40] for m in MALFORMED])
def test_malformed_config_is_one_line_with_key_path(text, expected, clawcore_home, capsys) -> None:
    config_file = clawcore_home / "clawcore.yaml"
    config_file.write_text(text)
    before = config_file.read_bytes()
    status = main(["config", "check"])
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"error: {config_file}: ")
    assert expected in lines[0]
    assert "Traceback" not in err and "ghp_" not in err  # a secret is never echoed
    assert config_file.read_bytes() == before  # nothing lost


def test_the_section_of_a_plugin_that_is_not_there_is_ignored_with_a_warning(clawcore_home, capsys,
                                                                              monkeypatch) -> None:
    config_file = clawcore_home / "clawcore.yaml"
    config_file.write_text("prism: {halfLife: 10m}\nsandbox:\n  docker: {enabled: true}\n  timeout: 5s\n")
    monkeypatch.setenv("CLAWCORE_DISABLE_PLUGINS", "prism,sandbox_docker")
    with pytest.warns(RuntimeWarning) as warned:
        assert main(["config", "check"]) == 0
    assert {str(w.message).split(":")[0] for w in warned} == {"prism", "sandbox.docker"}
    assert all("a section no installed or enabled plugin declares; ignored" in str(w.message) for w in warned)
    with pytest.warns(RuntimeWarning):
        assert main(["config", "show"]) == 0
    shown = capsys.readouterr().out
    assert "prism:" not in shown and "timeout: 5s" in shown  # the rest of the file still applies
    config_file.write_text("memroy: {}\nsandbox: {backnd: docker}\n")  # typos stay errors
    assert main(["config", "check"]) == 2
    assert [line.split(": ")[2] for line in capsys.readouterr().err.strip().splitlines()] == ["memroy",
                                                                                           "sandbox.backnd"]


def test_every_problem_is_reported(clawcore_home, capsys) -> None:
    (clawcore_home / "clawcore.yaml").write_text("workspace: 1\nfoo: 2\nsandbox:\n  backnd: x\n")
    assert main(["config", "check"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split(": ", 3)[2] for line in lines] == ["foo", "sandbox.backnd", "workspace"]


def test_invalid_config_stops_any_command_that_needs_it(clawcore_home, capsys) -> None:
    (clawcore_home / "clawcore.yaml").write_text("workspace: 1\n")
    assert main(["config", "show"]) == 2
    assert "workspace: expected string" in capsys.readouterr().err


def test_valid_config_checks_and_shows_defaults(clawcore_home, capsys) -> None:
    (clawcore_home / "clawcore.yaml").write_text("plugins:\n  disable: [models_openai]\n")
    assert main(["config", "check"]) == 0
    assert capsys.readouterr().out.startswith("ok: ")
    assert main(["config", "show", "--json"]) == 0
    import json

    shown = json.loads(capsys.readouterr().out)
    assert shown["plugins"] == {"load": None, "disable": ["models_openai"], "required": [], "trace": False}
    assert shown["workspace"] == "workspace"


def test_missing_file_means_defaults(clawcore_home) -> None:
    config = load_config(clawcore_home)
    assert config.get("plugins.trace") is False
    assert config.workspace == clawcore_home / "workspace"


def test_python_api_takes_a_mapping(clawcore_home) -> None:
    with pytest.raises(ConfigError, match=r"workspace: expected string"):
        load_config(clawcore_home, data={"workspace": []})


@pytest.mark.parametrize("text, expected", [("512m", 512 * 1024**2), ("2g", 2 * 1024**3), ("1024", 1024),
                                             ("64KiB", 64 * 1024), (4096, 4096)])
def test_sizes(text, expected) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text, expected", [("30s", 30.0), ("500ms", 0.5), ("2m", 120.0), ("1h", 3600.0), (7, 7.0)])
def test_durations(text, expected) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("bad", ["512x", "m", "-1m", ""])
def test_bad_sizes(bad) -> None:
    with pytest.raises(ValueError, match="is not a size like 512m"):
        parse_size(bad)


@pytest.mark.parametrize("bad", ["soon", "-5m", -5, -0.5])
def test_bad_durations(bad) -> None:
    with pytest.raises(ValueError, match="not a duration like 30s"):
        parse_duration(bad)


def test_a_credential_in_the_wrong_setting_is_masked_in_its_error(clawcore_home, capsys) -> None:
    token = "ghp_N6VEq4Jk2Lm9Xr7Tz1Pw8Ys3Bc5Dh0Ga4dcYy"
    (clawcore_home / "clawcore.yaml").write_text(f"sandbox: {{timeout: {token}}}\n")
    assert main(["config", "check"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "sandbox.timeout:" in line and "is not a duration" in line and token not in line


def test_a_plugin_section_refuses_keys_it_does_not_declare(plugin_manager, register_plugin) -> None:
    from clawcore import hookimpl

    class Settings:
        @hookimpl
        def config_schema(self):
            return {"pp": {"type": "object", "properties": {
                "a": {"type": "integer"},
                "sub": {"type": "object", "properties": {"x": {"type": "string"}}},
                "free": {"type": "object"},  # no properties listed: any key
                "own": {"type": "object", "properties": {"x": {}}, "additionalProperties": True}}}}

    register_plugin(Settings(), "pp")
    with pytest.raises(ConfigError) as raised:
        load_config(data={"pp": {"a": 2, "zzz": 3, "sub": {"x": "1", "y": 2}}}, pm=plugin_manager)
    assert raised.value.problems == ["pp.sub.y: unknown key (known keys: x)",
                                     "pp.zzz: unknown key (known keys: a, sub, free, own)"]
    config = load_config(data={"pp": {"free": {"anything": 1}, "own": {"y": 1}}}, pm=plugin_manager)
    assert config.get("pp.free.anything") == 1 and config.get("pp.own.y") == 1


@pytest.mark.parametrize("sections, message", [
    ({"bad": {"type": "nope"}}, "plugin 'author' declared its config section 'bad' with an invalid schema: "),
    ({"cmds": "a string"}, "plugin 'author' declared its config section 'cmds' as a string, not a JSON Schema"),
    ({"": {"type": "object"}}, "plugin 'author' declared a config section named '', not a dotted path"),
    ({"tools.policy": {"type": "object"}}, ("plugin 'author' may not declare 'tools.policy': it is inside 'tools', "
                                            "the section of 'policy'")),
    ({"workspace": {"type": "object"}}, "config section 'workspace' is declared by both 'clawcore' and 'author'"),
    ({"sandbox.network": {"type": "object"}}, ("plugin 'author' may not declare 'sandbox.network': 'sandbox' "
                                               "('sandbox-local') already has a key 'network'")),
])
def test_a_plugin_section_that_cannot_stand_is_one_line_naming_the_plugin(plugin_manager, register_plugin,
                                                                           sections, message) -> None:
    from clawcore import hookimpl

    class Author:
        @hookimpl
        def config_schema(self):
            return sections

    register_plugin(Author(), "author")
    with pytest.raises(ConfigError) as raised:
        load_config(data={}, pm=plugin_manager)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_a_backend_section_goes_where_its_parent_takes_plugin_sections(plugin_manager, register_plugin) -> None:
    from clawcore import hookimpl

    class Backend:
        @hookimpl
        def config_schema(self):
            return {"sandbox.mybackend": {"type": "object", "properties": {"on": {"type": "boolean"}}}}

    register_plugin(Backend(), "mybackend")
    assert load_config(data={"sandbox": {"mybackend": {"on": True}}}, pm=plugin_manager).get("sandbox.mybackend.on")


def test_a_composed_plugin_schema_is_left_as_its_author_wrote_it(plugin_manager, register_plugin) -> None:
    from clawcore import hookimpl

    class Composed:
        @hookimpl
        def config_schema(self):
            return {
                "allof": {"type": "object", "properties": {"a": {}}, "allOf": [{"properties": {"b": {}}}],
                          "unevaluatedProperties": False},
                "cond": {"type": "object", "properties": {"mode": {}},
                         "if": {"properties": {"mode": {"const": "remote"}}}, "then": {"properties": {"url": {}}}},
            }

    register_plugin(Composed(), "composed")
    config = load_config(data={"allof": {"a": 1, "b": 2}, "cond": {"mode": "remote", "url": "x"}}, pm=plugin_manager)
    assert config.get("allof.b") == 2 and config.get("cond.url") == "x"
    with pytest.raises(ConfigError, match="'zzz' was unexpected"):  # the author's own closing still holds
        load_config(data={"allof": {"zzz": 1}}, pm=plugin_manager)


def test_an_unknown_key_inside_a_core_section_stays_an_error(clawcore_home, capsys) -> None:
    (clawcore_home / "clawcore.yaml").write_text("memory:\n  search:\n    hybrid:\n      vectorWeight: 0.7\n")
    assert main(["config", "check"]) == 2
    assert "memory.search.hybrid: unknown key" in capsys.readouterr().err


def test_a_path_setting_under_tilde_is_in_the_user_home(clawcore_home, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    config = load_config(clawcore_home, data={"workspace": "~/notes"})
    assert config.workspace == tmp_path / "user" / "notes"
    assert load_config(clawcore_home, data={"workspace": str(tmp_path / "w")}).workspace == tmp_path / "w"
    (clawcore_home / "~" / "notes").mkdir(parents=True)  # where earlier versions put it
    with pytest.warns(RuntimeWarning, match=r"is a folder named ~: settings written ~/\.\.\. .* move what it holds"):
        load_config(clawcore_home, data={"workspace": "~/notes"})
