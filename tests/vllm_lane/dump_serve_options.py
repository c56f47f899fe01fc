# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Print the option strings of the real `vllm serve` parser as JSON (run with a venv that has vLLM).

plugins/module_utils/launch/serve_options.py ships this table per vLLM version (the board-side
modules cannot import vLLM); tests/integration_py/test_launch_inputs_programs.py compares the shipped
table with this output when the lane venv is installed.  To add a version:
``<venv>/bin/python tests/vllm_lane/dump_serve_options.py`` and paste the lists into SERVE_OPTIONS.
"""
import json

import vllm
from vllm.entrypoints.cli.serve import ServeSubcommand
from vllm.utils.argparse_utils import FlexibleArgumentParser


def main():
    top = FlexibleArgumentParser()
    parser = ServeSubcommand().subparser_init(top.add_subparsers(dest="subparser"))
    long_names, short = [], {}
    for action in parser._actions:  # pylint: disable=protected-access
        longs = [o[2:] for o in action.option_strings if o.startswith("--")]
        long_names += longs
        for option in action.option_strings:
            if not option.startswith("--"):
                short[option] = longs[0]
    print(json.dumps({"version": vllm.__version__, "allow_abbrev": parser.allow_abbrev,
                      "long": sorted(long_names), "short": dict(sorted(short.items()))}))


if __name__ == "__main__":
    main()
