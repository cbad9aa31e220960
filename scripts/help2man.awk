# help2man.awk - one man page (groff -man) from the text of `dynftrace --help`
# or `dynftrace COMMAND --help`, so that the pages say what the command says.
# POSIX awk (mawk, gawk). Variables (-v):
#   page      the page's name: dynftrace or dynftrace-COMMAND
#   desc      the NAME line's description (empty: the help's first sentence)
#   version   dynftrace's version;  date: YYYY-MM-DD
#   commands  the commands, space-separated (SEE ALSO, the COMMANDS section)
#   libdir, soname   where the runtime is installed (dynftrace.1's FILES)
#
# What the help texts look like, and what each part becomes:
#   usage: dynftrace CMD [OPTIONS] ...   SYNOPSIS (indented lines starting with
#          dynftrace ...                 "dynftrace" are more synopses, other
#                                        indented lines continue the last one)
#   Prose at column 0                    a filled paragraph
#   Exit status: ...                     the EXIT STATUS section
#   Heading:  (then indented lines)      the COMMANDS section (dynftrace.1)
#   Indented blocks whose lines near the a list of options (.TP): the term is
#   least indent start with - or (       what comes before two spaces, the
#                                        rest and deeper lines its text
#   Any other indented block             an example, kept as it is (.nf)

function esc_char(c) {
	if (c == "\\") return "\\e"
	if (c == "-") return "\\-"
	if (c == "'") return "\\(aq"
	if (c == "`") return "\\(ga"
	return c
}

# S escaped for groff; a line may not start with a control character.
function esc(s,    i, out) {
	out = ""
	for (i = 1; i <= length(s); i++)
		out = out esc_char(substr(s, i, 1))
	if (substr(out, 1, 1) == ".")
		out = "\\&" out
	return out
}

# A synopsis or an option's term: options bold, metavariables (PID, GLOB)
# italic, no line break inside brackets.
function fmt(s,    i, j, c, p, tok, out, depth) {
	out = ""
	depth = 0
	i = 1
	while (i <= length(s)) {
		c = substr(s, i, 1)
		p = i > 1 ? substr(s, i - 1, 1) : " "
		if (c == "-" && index(" [|", p)) {
			for (j = i; j <= length(s) && !index(" ]|=[,", substr(s, j, 1)); j++)
				;
			tok = substr(s, i, j - i)
			out = out "\\fB" esc(tok) "\\fR"
			i = j
			continue
		}
		if (c ~ /[A-Z]/ && p !~ /[A-Za-z0-9_]/) {
			for (j = i; j <= length(s) && substr(s, j, 1) ~ /[A-Za-z0-9_]/; j++)
				;
			tok = substr(s, i, j - i)
			if (tok ~ /^[A-Z][A-Z0-9_]+$/)
				out = out "\\fI" tok "\\fR"
			else
				out = out esc(tok)
			i = j
			continue
		}
		if (c == "[") depth++
		if (c == "]" && depth > 0) depth--
		if (c == " " && depth > 0)
			out = out "\\~"
		else
			out = out esc_char(c)
		i++
	}
	return out
}

function indent_of(s) {
	match(s, /^ */)
	return RLENGTH
}

function trim(s) {
	sub(/^[ \t]+/, "", s)
	sub(/[ \t]+$/, "", s)
	return s
}

# Remember "dynftrace CMD" mentioned in TEXT, for SEE ALSO.
function mentions(text,    n, w, k) {
	n = split(text, w, /[^A-Za-z0-9_-]+/)
	for (k = 1; k < n; k++)
		if (w[k] == "dynftrace" && (w[k + 1] in is_command))
			seen["dynftrace-" w[k + 1]] = 1
}

function out_text(text) {
	mentions(text)
	print esc(trim(text))
}

# Lines FROM..TO of L are one indented block.
function out_block(from, to,    k, min, ind, opts, first, term, rest, pos, d) {
	min = 1000
	for (k = from; k <= to; k++) {
		ind = indent_of(L[k])
		if (ind < min) min = ind
	}
	# An entry starts less than 7 columns right of the block's left edge
	# (-p, and   --duration below it); its text's lines are further right.
	opts = min <= 8
	for (k = from; !in_commands && k <= to; k++)
		if (indent_of(L[k]) - min < 7 && substr(L[k], indent_of(L[k]) + 1, 1) !~ /[-(]/)
			opts = 0
	if (!opts) {
		print ".PP"
		print ".RS 4"
		print ".nf"
		for (k = from; k <= to; k++) {
			mentions(L[k])
			print esc(substr(L[k], min + 1))
		}
		print ".fi"
		print ".RE"
		return
	}
	for (k = from; k <= to; k++) {
		ind = indent_of(L[k])
		if (ind - min < 7) {
			rest = substr(L[k], ind + 1)
			pos = match(rest, /  +/)
			if (pos) {
				term = substr(rest, 1, pos - 1)
				d = substr(rest, pos + RLENGTH)
			} else {
				term = rest
				d = ""
			}
			if (in_commands) {
				print ".TP 10"
				print "\\fB" esc(term) "\\fR"
				print esc(trim(d))
				continue
			}
			print ".TP"
			print fmt(trim(term))
			print ".br" # the text below a short term too
			if (d != "")
				out_text(d)
		} else {
			out_text(L[k])
		}
	}
}

# Lines FROM..TO (no blank line among them) of L.
function out_para(from, to,    k, text, start) {
	if (L[from] ~ /^Exit status:/) {
		text = L[from]
		sub(/^Exit status: */, "", text)
		exit_text = text
		for (k = from + 1; k <= to && indent_of(L[k]) == 0; k++)
			exit_text = exit_text " " L[k]
		if (k <= to)
			out_block(k, to)
		return
	}
	k = from
	while (k <= to) {
		if (indent_of(L[k]) > 0) {
			for (start = k; k <= to && indent_of(L[k]) > 0; k++)
				;
			out_block(start, k - 1)
			continue
		}
		# "Commands:" and the like, then the list under it
		if (L[k] ~ /:$/ && k < to && indent_of(L[k + 1]) > 0) {
			if (page == "dynftrace" && L[k] == "Commands:") {
				print ".SH COMMANDS"
				in_commands = 1
			} else {
				print ".PP"
				out_text(L[k])
			}
			for (start = ++k; k <= to && indent_of(L[k]) > 0; k++)
				;
			out_block(start, k - 1)
			in_commands = 0
			continue
		}
		print ".PP"
		for (; k <= to && indent_of(L[k]) == 0 && !(L[k] ~ /:$/ && k < to && indent_of(L[k + 1]) > 0); k++)
			out_text(L[k])
	}
}

{
	sub(/[ \t]+$/, "")
	L[++n] = $0
}

END {
	if (n == 0 || L[1] !~ /^usage: /) {
		print "help2man.awk: " page ": the help does not start with 'usage: '" > "/dev/stderr"
		exit 1
	}
	nc = split(commands, cmd, " ")
	for (k = 1; k <= nc; k++)
		is_command[cmd[k]] = 1

	# The synopses.
	nsyn = 1
	syn[1] = substr(L[1], 8)
	for (i = 2; i <= n && indent_of(L[i]) > 0; i++) {
		if (trim(L[i]) ~ /^dynftrace /)
			syn[++nsyn] = trim(L[i])
		else
			syn[nsyn] = syn[nsyn] " " trim(L[i])
	}
	body = i

	if (desc == "") {
		# The first sentence after the synopsis, as NAME says it.
		for (k = body; k <= n && L[k] == ""; k++)
			;
		desc = L[k]
		sub(/\..*/, "", desc)
		desc = tolower(substr(desc, 1, 1)) substr(desc, 2)
	}

	title = toupper(page)
	print ".\\\" Generated from `" page " --help` by scripts/help2man.awk: edit the help text."
	printf ".TH %s 1 \"%s\" \"dynftrace %s\" \"User Commands\"\n", esc(title), date, version
	# Option names and paths are not hyphenated.
	print ".nh"
	print ".SH NAME"
	print esc(page) " \\- " esc(desc)
	print ".SH SYNOPSIS"
	print ".ad l"
	for (k = 1; k <= nsyn; k++) {
		if (k > 1) print ".br"
		s = syn[k]
		# "dynftrace CMD" in bold as a whole
		if (match(s, /^dynftrace( [a-z][a-z-]*)?/) && (substr(s, RLENGTH + 1, 1) == " " || RLENGTH == length(s))) {
			head = substr(s, 1, RLENGTH)
			print "\\fB" esc(head) "\\fR" fmt(substr(s, length(head) + 1))
		} else {
			print fmt(s)
		}
	}
	print ".ad"
	print ".SH DESCRIPTION"

	i = body
	while (i <= n) {
		if (L[i] == "") { i++; continue }
		for (j = i; j <= n && L[j] != ""; j++)
			;
		out_para(i, j - 1)
		i = j
	}

	if (exit_text != "") {
		print ".SH \"EXIT STATUS\""
		out_text(exit_text)
	}
	if (page == "dynftrace") {
		print ".PP"
	print "Each command has its manual page: \\fBdynftrace\\-record\\fR(1) and so on."
	print ".SH FILES"
		print ".TP"
		print esc(libdir "/" soname)
		print "The runtime: preloaded into the programs \\fBdynftrace record\\fR runs, linked"
		print "into programs that use its API (\\fBpkg\\-config dynftrace\\fR)."
		print ".TP"
		print esc(libdir "/dynftrace/libdynftrace-attach.so")
		print "The name \\fBdynftrace attach\\fR loads the runtime under."
		for (k = 1; k <= nc; k++)
			seen["dynftrace-" cmd[k]] = 1
	} else {
		seen["dynftrace"] = 1
	}
	delete seen[page]
	print ".SH \"SEE ALSO\""
	# dynftrace(1) first, then the commands in the order dynftrace lists them
	m = 0
	if ("dynftrace" in seen) also[++m] = "dynftrace"
	for (k = 1; k <= nc; k++)
		if (("dynftrace-" cmd[k]) in seen)
			also[++m] = "dynftrace-" cmd[k]
	for (k = 1; k <= m; k++)
		print ".BR " esc(also[k]) " (1)" (k < m ? "," : "")
}
