"""target.toml's `[control]` table (issue 37, item 1): the control as a process of its own is declared by its
command and three settings, each mistake refused at load with what to write instead, and its program
checked before a run starts anything, even where the workers run in an image (the control runs on the host)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from chaos.errors import ConfigError
from chaos.target import ControlCommand, load_target

HEAD = 'name = "t"\nbackend = "redis"\nworker = ["{python}", "{target_dir}/worker.py"]\n'
CONTRACT = "\n[contract]\ndelivery = \"at-least-once\"\nrecovery_bound_s = 2.0\n"


def target_with(tmp_path: Path, control: str) -> Path:
    folder = tmp_path / "t"
    folder.mkdir(exist_ok=True)
    (folder / "target.toml").write_text(HEAD + control + CONTRACT)
    return folder


def test_a_control_table_declares_a_process_with_its_defaults(tmp_path: Path) -> None:
    target = load_target(target_with(tmp_path, '[control]\ncommand = ["node", "{target_dir}/control.js", "{param:x}"]\n'
                                                "\n[params]\nx = 2\n"))
    assert target.control_process == ControlCommand(["node", "{target_dir}/control.js", "{param:x}"], True, True, 30.0)
    assert target.control == "[control] command"
    assert target.command(target.control_process.command, "control", "", "") == ["node", f"{target.path}/control.js",
                                                                                   "2"]


def test_the_class_form_declares_no_process(tmp_path: Path) -> None:
    target = load_target(target_with(tmp_path, 'control = "control:Control"\n'))
    assert target.control_process is None and target.control == "control:Control"


def test_every_setting_is_read(tmp_path: Path) -> None:
    target = load_target(target_with(tmp_path, '[control]\ncommand = ["ruby", "control.rb"]\nshows_deliveries = false\n'
                                                "keeps_completions = false\ntimeout_s = 5\n"))
    assert target.control_process == ControlCommand(["ruby", "control.rb"], False, False, 5.0)


@pytest.mark.parametrize(("control", "expected"), [
    ("control = 5\n", 'control = 5; expected "module:Class" (a class in the suite\'s process) or [control] with'),
    ("[control]\nshows_deliveries = true\n", "[control] command = None; expected a non-empty list of strings"),
    ('[control]\ncommand = []\n', "[control] command = []; expected a non-empty list of strings"),
    ('[control]\ncommand = "node control.js"\n', "[control] command = 'node control.js'; expected a non-empty list"),
    ('[control]\ncommand = ["node"]\nshow_deliveries = true\n',
     "[control] sets 'show_deliveries'; its keys are command, shows_deliveries, keeps_completions, timeout_s"),
    ('[control]\ncommand = ["node"]\nkeeps_completions = "no"\n', "[control] keeps_completions = 'no'; expected true "
                                                                  "or false"),
    ('[control]\ncommand = ["node"]\ntimeout_s = 0\n', "[control] timeout_s = 0; expected a finite, positive number"),
    ('[control]\ncommand = ["node", "{workr}"]\n', "[control] command argument '{workr}' uses the placeholder {workr}"),
])
def test_each_mistake_is_refused_saying_what_to_write(tmp_path: Path, control: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_target(target_with(tmp_path, control))
    assert expected in str(caught.value), str(caught.value)


def test_the_controls_program_is_checked_even_where_workers_run_in_an_image(tmp_path: Path) -> None:
    folder = target_with(tmp_path, '[control]\ncommand = ["{target_dir}/control.sh"]\n')
    (folder / "worker.py").write_text("")
    (folder / "control.sh").write_text("#!/bin/sh\n")
    target = load_target(folder)
    for image in (None, "queue-chaos/python"):
        with pytest.raises(ConfigError, match=r"\[control\] command = .* which is a file that is not executable"):
            replace(target, image=image).check_programs()
    (folder / "control.sh").chmod(0o755)
    replace(target, image="queue-chaos/python").check_programs()
