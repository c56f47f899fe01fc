#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r"""
module: safe_dir
short_description: Create a directory for a less-privileged account without following links
version_added: 0.1.0
description:
  - Creates O(path) with O(owner), O(group) and O(mode), or takes over a directory the collection created before,
    walking the path one component at a time on directory descriptors and changing owner and mode on the
    descriptor it opened (C(O_NOFOLLOW)), so no name is resolved twice.
  - Use it instead of M(ansible.builtin.file) for every directory that a less-privileged account owns or whose
    parent it can write. M(ansible.builtin.file) follows a link at O(path) - the service account could replace its
    cache with a link to C(/etc) and the next run as root would give it C(/etc).
  - A symbolic link is followed only where only root could have made it (a root-owned link in a root-owned
    directory that group and others cannot write, such as an operator's link to another disk); any other link on
    the way or at the end, dangling or not, is refused with rule C(host.path_link) and nothing changes.
  - An existing directory is changed only when the collection created it (the file C(.jetson-specdec-dir) in it)
    or when it already has the owner, group and mode asked for (made by an earlier version; the marker is added).
    Any other existing directory - a system or another program's directory - is refused with rule
    C(host.path_foreign). A file where the directory should be is refused with C(host.path_not_dir).
  - Missing parent directories are created C(root:root 0755).
author: jetson.specdec contributors (@jetson-specdec)
extends_documentation_fragment:
  - jetson.specdec.attributes
attributes:
  check_mode:
    support: full
    details: Walks and checks the path the same way and says what it would create or change; changes nothing. An
      O(owner) or O(group) that does not exist yet (created by an earlier task of the same check run) is reported by
      name.
  diff_mode:
    support: full
    details: The owner, group and mode before and after.
options:
  path:
    description: The directory (absolute).
    type: path
    required: true
  owner:
    description: Its owner, an account name or a uid.
    type: str
    required: true
  group:
    description: Its group, a group name or a gid.
    type: str
    required: true
  mode:
    description: Its mode as an octal string (C("0750")).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Create the model cache for the service account
  jetson.specdec.safe_dir:
    path: /var/lib/vllm/huggingface
    owner: vllm
    group: vllm
    mode: "0750"
"""

RETURN = r"""
real_path:
  description: The directory changed, after the links that were followed (only root-made ones are).
  returned: success
  type: str
  sample: /var/lib/vllm/huggingface
created:
  description: Whether the directory was (or, in check mode, would be) created.
  returned: success
  type: bool
before:
  description: Owner uid, gid and mode before (null for a new directory).
  returned: success
  type: dict
  sample: {uid: 0, gid: 0, mode: "0755"}
after:
  description: Owner uid, gid and mode after.
  returned: success
  type: dict
  sample: {uid: 998, gid: 998, mode: "0750"}
rule:
  description: The rule that refused the path (C(host.path_link), C(host.path_not_dir), C(host.path_foreign)).
  returned: failure
  type: str
"""

import grp
import pwd
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.jetson.specdec.plugins.module_utils.common.safe_dir import UnsafePathError, ensure_dir


def _id(module, value, what, lookup):
    if re.match(r"\A[0-9]{1,10}\Z", value):
        return int(value)
    try:
        return lookup(value)
    except KeyError:
        if module.check_mode:
            # A check run before the account exists (the task creating it only said it would): predict
            # with an id nothing has, so the path is still walked and checked, and report the name.
            return -1
        module.fail_json(msg="safe_dir: the %s %r does not exist on the host. Fix: create it first." % (what, value))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            owner=dict(type="str", required=True),
            group=dict(type="str", required=True),
            mode=dict(type="str", required=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not re.match(r"\A0?[0-7]{3,4}\Z", p["mode"]):
        module.fail_json(msg="safe_dir: mode %r is not an octal mode. Fix: for example \"0750\"." % p["mode"])
    uid = _id(module, p["owner"], "account", lambda name: pwd.getpwnam(name).pw_uid)
    gid = _id(module, p["group"], "group", lambda name: grp.getgrnam(name).gr_gid)
    try:
        result = ensure_dir(p["path"], uid, gid, int(p["mode"], 8), check_mode=module.check_mode)
    except UnsafePathError as exc:
        module.fail_json(msg="%s (nothing was changed)" % exc, rule=exc.rule, path=p["path"])
    except OSError as exc:
        module.fail_json(msg="safe_dir: cannot create or change %s: %s" % (p["path"], exc), path=p["path"])
    if uid == -1:
        result["after"]["uid"] = p["owner"]
    if gid == -1:
        result["after"]["gid"] = p["group"]
    diff = {"before": {"path": p["path"], "state": "directory" if result["before"] else "absent"},
            "after": {"path": p["path"], "state": "directory"}}
    if result["before"]:
        diff["before"].update(result["before"])
    diff["after"].update(result["after"])
    module.exit_json(changed=result["changed"], path=p["path"], real_path=result["real_path"],
                     created=result["created"], before=result["before"], after=result["after"], diff=diff)


if __name__ == "__main__":
    main()
