# SPDX-License-Identifier: GPL-2.0-only
#
# Total a stream of TAP suites.  Each suite is framed by
#   === LZCHAN-SUITE <name>      and      === LZCHAN-EXIT <status>
# Everything is echoed; at the end one line per suite and the closing line
# "N passed, N failed, N skipped".  Exits 1 if anything failed.
#
# A suite also fails (one failure each) when: its program exited non-zero
# without reporting a failed test; it planned more tests than it reported;
# it reported nothing; or the stream ended inside it.

function close_suite(status,    missing) {
	if (status != 0 && s_fail == 0) {
		s_fail++
		note[name] = note[name] " exited with status " status ";"
	}
	missing = s_plan - (s_pass + s_fail + s_skip)
	if (s_plan >= 0 && missing > 0) {
		s_fail += missing
		note[name] = note[name] " " missing " planned test(s) never reported;"
	}
	if (s_plan < 0 && s_pass + s_fail + s_skip == 0) {
		s_fail++
		note[name] = note[name] " no TAP output;"
	}
	pass += s_pass; fail += s_fail; skip += s_skip
	line[++nsuites] = sprintf("# %-28s %3d passed, %d failed, %d skipped%s",
				  name, s_pass, s_fail, s_skip, note[name])
	insuite = 0
}

BEGIN { pass = fail = skip = 0; insuite = 0 }

{ sub(/\r$/, ""); print; fflush() }

/^=== LZCHAN-SUITE / {
	if (insuite)
		close_suite(1)
	name = $3; insuite = 1
	s_pass = s_fail = s_skip = 0; s_plan = -1
	next
}
/^=== LZCHAN-EXIT / { if (insuite) close_suite($3 + 0); next }
!insuite { next }
/^1\.\.[0-9]+/ { s_plan = substr($1, 4) + 0; next }
/^not ok/ { if ($0 ~ /#[ \t]*[Tt][Oo][Dd][Oo]/) s_skip++; else s_fail++; next }
/^ok/ { if ($0 ~ /#[ \t]*[Ss][Kk][Ii][Pp]/) s_skip++; else s_pass++; next }

END {
	if (insuite) {
		note[name] = note[name] " output ended inside the suite;"
		close_suite(1)
	}
	print ""
	for (i = 1; i <= nsuites; i++)
		print line[i]
	if (nsuites == 0) {
		print "# no suites ran"
		fail++
	}
	printf "%d passed, %d failed, %d skipped\n", pass, fail, skip
	exit fail > 0
}
