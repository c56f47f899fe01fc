# `make demo`'s console during the rollout: what each host is doing as it happens, not Ansible's
# per-task lines (those stay in rollout.log). Prints each host's progress lines ("<host>: ..."),
# the JETSON SPECDEC banners with their lines (a batch's verdicts, the fleet line), and everything
# from PLAY RECAP on (the recap and the fleet summary). -v hosts=<name>,<name>,...
BEGIN { n = split(hosts, names, ","); for (i = 1; i <= n; i++) host[names[i]] = 1 }
/^PLAY RECAP/ { tail = 1 }
tail { print; fflush(); next }
/^JETSON SPECDEC/ { block = 1 }
/^(TASK|PLAY|RUNNING HANDLER) \[/ { block = 0 }
block { print; fflush(); next }
{
    i = index($0, ": ")
    if (i > 1 && (substr($0, 1, i - 1) in host)) { print; fflush() }
}
