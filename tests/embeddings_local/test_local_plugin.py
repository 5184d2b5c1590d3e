"""The plugin is found through its entry point and declares its config section."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import clawcore_embeddings_local
import importlib_metadata
import pluggy
import pytest
from clawcore.config import load_config
from clawcore.errors import ConfigError
from clawcore.hooks import Hooks
from clawcore_embeddings_local import LocalEmbeddingProvider, LocalSettings


def test_entry_point_is_found() -> None:
    eps = {ep.name: ep for ep in importlib_metadata.entry_points(group="clawcore")}
    assert "embeddings_local" in eps
    assert eps["embeddings_local"].load() is clawcore_embeddings_local


def test_registers_the_local_provider(plugin_manager: pluggy.PluginManager, register_plugin) -> None:
    register_plugin(clawcore_embeddings_local, name="embeddings_local")
    providers = Hooks(plugin_manager).embedding_providers()
    assert providers["local"] == LocalEmbeddingProvider.from_settings


def test_config_defaults_fill_the_section(
    clawcore_home: Path, plugin_manager: pluggy.PluginManager, register_plugin
) -> None:
    register_plugin(clawcore_embeddings_local, name="embeddings_local")
    config = load_config(clawcore_home, data={}, pm=plugin_manager)
    assert config.section("memory.embeddings.local") == {
        "model": "all-MiniLM-L6-v2",
        "modelPath": None,
        "sha256": None,
        "threads": 1,
        "batchSize": 8,
    }


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ({"model": "no-such-model"}, "model"),
        ({"threads": -1}, "threads"),
        ({"batchSize": "big"}, "batchSize"),
        ({"modelPth": "/x"}, "modelPth"),
        ({"sha256": "abc"}, "sha256"),
    ],
)
def test_bad_config_is_one_clear_error(
    clawcore_home: Path, plugin_manager: pluggy.PluginManager, register_plugin, section: dict, needle: str
) -> None:
    register_plugin(clawcore_embeddings_local, name="embeddings_local")
    with pytest.raises(ConfigError) as raised:
        load_config(clawcore_home, data={"memory": {"embeddings": {"local": section}}}, pm=plugin_manager)
    assert needle in str(raised.value)


@pytest.mark.parametrize(
    "section", [{"model": "nope"}, {"threads": True}, {"batchSize": 0}, {"sha256": "XYZ"}, {"extra": 1}]
)
def test_python_api_checks_settings_too(tmp_path: Path, section: dict) -> None:
    with pytest.raises(ConfigError, match="memory.embeddings.local"):
        LocalEmbeddingProvider.from_settings(section, tmp_path)


@pytest.mark.parametrize(
    ("section", "accepted"),
    [
        ({"threads": 1, "batchSize": 8}, {"threads": 1, "batch_size": 8}),
        ({"threads": 1.0}, None),  # a count is written as a whole number
        ({"threads": 1.5}, None),
        ({"batchSize": 2000.0}, None),
        ({"batchSize": 0}, None),
        ({"modelPath": ""}, None),
        ({"modelPath": "   "}, None),
    ],
)
def test_config_check_and_the_provider_agree(
    clawcore_home: Path, plugin_manager: pluggy.PluginManager, register_plugin, section: dict,
    accepted: dict | None,
) -> None:
    """What `config check` passes starts; what it refuses is refused at start with the same words."""
    register_plugin(clawcore_embeddings_local, name="embeddings_local")
    data = {"memory": {"embeddings": {"local": section}}}
    if accepted is None:
        with pytest.raises(ConfigError) as checked:
            load_config(clawcore_home, data=data, pm=plugin_manager)
        with pytest.raises(ConfigError) as started:
            LocalSettings.from_mapping(section, clawcore_home)
        key = next(iter(section))
        assert key in str(checked.value) and key in str(started.value)
        if key == "modelPath":
            assert "must be a non-empty path" in str(checked.value) and "must be a non-empty path" in str(started.value)
        return
    config = load_config(clawcore_home, data=data, pm=plugin_manager)
    parsed = LocalSettings.from_mapping(config.section("memory.embeddings.local"), clawcore_home)
    for name, value in accepted.items():
        assert getattr(parsed, name) == value and type(getattr(parsed, name)) is int


def test_import_is_cheap() -> None:
    # Every clawcore start imports every plugin: no model, runtime or hub client at import.
    code = (
        "import sys, clawcore_embeddings_local\n"
        "heavy = {'onnxruntime', 'tokenizers', 'huggingface_hub'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
