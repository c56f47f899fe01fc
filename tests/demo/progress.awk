# `make demo`'s console during the rollout: what each host is doing as it happens, not Ansible's
# per-task lines (those stay in rollout.log). Prints each host's progress lines ("<host>: ..."), the
# messages the role prints with ansible.builtin.debug that start with a host's name (a rung that failed
# and what comes next, the third arm, a candidate that broke), as one line each, the JETSON SPECDEC
# banners with their lines (a batch's verdicts, the fleet line), and everything from PLAY RECAP on (the
# recap and the fleet summary). -v hosts=<name>,<name>,...
#
# A debug message reaches the console in Ansible's default result format, a JSON object over lines:
#     ok: [agx32-01] => {
#         "msg": "agx32-01: Rung 0 (eagle3 at utilization 0.75) failed: out_of_memory. ... (vLLM: \"...\") ..."
#     }
# Its "msg" string is unescaped (\" \\ \/; a line break or tab becomes a space) and printed on one line.
BEGIN { n = split(hosts, names, ","); for (i = 1; i <= n; i++) host[names[i]] = 1 }

function hexval(s,    i, v) {
    v = 0
    for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
    return v
}

# The text of a JSON string body (the part between its quotes), on one line.
function unjson(s,    out, i, c, e) {
    out = ""
    for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c != "\\") { out = out c; continue }
        e = substr(s, ++i, 1)
        if (e == "n" || e == "t" || e == "r") out = out " "
        else if (e == "u") {
            # Ansible writes non-ASCII as is (ensure_ascii=False): \u is a control character, or kept as written
            c = hexval(substr(s, i + 1, 4))
            out = out (c < 32 || c == 127 ? " " : c < 127 ? sprintf("%c", c) : "\\u" substr(s, i + 1, 4))
            i += 4
        }
        else if (e == "b" || e == "f") out = out ""
        else out = out e
    }
    gsub(/ +$/, "", out)
    return out
}

function for_a_host(line,    i) {
    i = index(line, ": ")
    return i > 1 && (substr(line, 1, i - 1) in host)
}

/^PLAY RECAP/ { tail = 1 }
tail { print; fflush(); next }
/^JETSON SPECDEC/ { block = 1 }
/^(TASK|PLAY|RUNNING HANDLER) \[/ { block = 0; result = 0 }
block { print; fflush(); next }
/^(ok|changed): \[[^]]+\] => \{$/ { result = 1; next }
result && /^}$/ { result = 0; next }
result {
    if (match($0, /^    "msg": ".*",?$/)) {
        text = $0
        sub(/^    "msg": "/, "", text)
        sub(/",?$/, "", text)
        text = unjson(text)
        if (for_a_host(text)) { print text; fflush() }
    }
    next
}
for_a_host($0) { print; fflush() }
