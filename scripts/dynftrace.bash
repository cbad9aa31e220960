# bash completion for dynftrace                            -*- shell-script -*-
#
# Commands, options, what each option takes and the command's arguments are
# read from the command's own --help (once per shell), so whatever a new
# release adds completes without a change here:
#   dynftrace --help            the commands (the "Commands:" list)
#   dynftrace CMD --help        its options ("  -d, --data DIR   ..." lines),
#                               their values when the text starts with a list
#                               ("function_graph (...), function or profile"),
#                               its arguments (the usage line: PID, PROG, ...)
# Arguments: PID of ctl, pipe, detach: the processes with a control socket
# (where `dynftrace ps` finds them); of attach and -p: your processes. ctl's
# FILE and VALUE are asked of the process itself (`dynftrace ctl PID`).

# The --help of dynftrace (no CMD) or of CMD, from a cache per binary.
_dynftrace_help()
{
	local key="$1|${2-}"
	[[ -v _dynftrace_cache ]] || declare -gA _dynftrace_cache=()
	if [[ -z ${_dynftrace_cache[$key]+set} ]]; then
		_dynftrace_cache[$key]=$("$1" ${2:+"$2"} --help 2>/dev/null)
	fi
	printf '%s\n' "${_dynftrace_cache[$key]}"
}

_dynftrace_commands()
{
	_dynftrace_help "$1" | awk '/^Commands:$/ { c = 1; next } c && /^$/ { c = 0 }
		c && /^  [a-z]/ { print $1 }'
}

# "OPTION<TAB>METAVAR<TAB>VALUES" per option of CMD; METAVAR and VALUES may be
# empty. An option's entry starts less than 7 columns right of the block's
# edge with a dash; the term ends at two spaces; deeper lines continue it.
_dynftrace_options()
{
	# and those of the command whose options it takes ("Takes the options
	# of 'dynftrace record'": live)
	local of
	of=$(_dynftrace_help "$1" "$2" | tr '\n' ' ' |
		sed -n "s/.*[Tt]akes the options of .dynftrace \([a-z-]*\).*/\1/p")
	{
		_dynftrace_options1 "$1" "$2"
		[[ -n $of && $of != "$2" ]] && _dynftrace_options1 "$1" "$of"
	} | awk -F '\t' '!seen[$1]++'
}

_dynftrace_options1()
{
	_dynftrace_help "$1" "$2" | awk '
	function flush(    n, alt, k, w, e, m, d, nv, v, vals, ok) {
		if (term == "") return
		d = desc
		while (gsub(/\([^()]*\)/, "", d)) ;
		sub(/[.;:].*/, "", d)
		gsub(/ or /, ",", d)
		nv = split(d, v, ",")
		vals = ""
		ok = nv >= 2
		for (k = 1; ok && k <= nv; k++) {
			gsub(/^ +| +$/, "", v[k])
			if (v[k] !~ /^[a-z_][a-z0-9_]*$/) ok = 0
			else vals = vals (k > 1 ? " " : "") v[k]
		}
		if (!ok) vals = ""
		# "-p, --pid PID": the metavariable is both spellings
		n = split(term, alt, /, /)
		split(alt[n], w, " ")
		m = w[2]
		# "--demangle=STYLE": the option, and STYLE its metavariable (the
		# command takes "--demangle STYLE" as well)
		if (split(w[1], e, "=") == 2) m = e[2]
		for (k = 1; k <= n; k++) {
			split(alt[k], w, " ")
			sub(/=.*/, "", w[1])
			if (w[1] ~ /^-/)
				print w[1] "\t" m "\t" vals
		}
		term = ""
	}
	/^$/ { flush(); edge = -1; next }
	{
		match($0, /^ */); ind = RLENGTH
		if (ind == 0) { flush(); edge = -1; next }
		if (edge < 0 || ind < edge) edge = ind
		rest = substr($0, ind + 1)
		if (ind - edge < 7 && rest ~ /^-/) {
			flush()
			if (match(rest, /  +/)) {
				term = substr(rest, 1, RSTART - 1); desc = substr(rest, RSTART + RLENGTH)
			} else {
				term = rest; desc = ""
			}
		} else if (term != "") {
			desc = desc " " rest
		}
	}
	END { flush() }'
}

# The arguments of CMD in the order its usage line names them, option
# groups left out: "PID FILE VALUE", "PROG ARGS...", "PROG|LIB...".
_dynftrace_args()
{
	_dynftrace_help "$1" "$2" | awk '
	NR == 1 && !/^usage: / { exit }
	NR > 1 && !/^ / { exit }
	NR > 1 && /^ +dynftrace / { exit }
	{
		n = split($0, w, " ")
		for (k = (NR == 1 ? 4 : 1); k <= n; k++) {
			t = w[k]
			if (depth == 0)
				skip = t ~ /^\[-/ || t == "[OPTIONS]"
			o = gsub(/\[/, "", t)
			c = gsub(/\]/, "", t)
			if (!skip && t ~ /^[A-Z]/)
				print t
			depth += o - c
			if (depth < 0) depth = 0
		}
	}'
}

# Processes with a control socket: ctl, pipe, ps and detach can reach them.
_dynftrace_ctl_pids()
{
	local d f p dirs=(/tmp/dynftrace-"$EUID")
	[[ -n ${XDG_RUNTIME_DIR-} ]] && dirs+=("$XDG_RUNTIME_DIR/dynftrace")
	((EUID == 0)) && dirs+=(/tmp/dynftrace-* /run/user/*/dynftrace)
	for d in "${dirs[@]}"; do
		for f in "$d"/*.sock; do
			p=${f##*/}
			p=${p%.sock}
			[[ $p =~ ^[0-9]+$ && -d /proc/$p ]] && echo "$p"
		done
	done | sort -nu
}

_dynftrace_all_pids()
{
	if ((EUID == 0)); then
		ps -e -o pid= 2>/dev/null
	else
		ps -u "$EUID" -o pid= 2>/dev/null
	fi
}

_dynftrace_value()
{
	local meta=$1 vals=$2 cur=$3
	if [[ -n $vals ]]; then
		COMPREPLY=($(compgen -W "$vals" -- "$cur"))
		return
	fi
	case $meta in
	DIR) COMPREPLY=($(compgen -d -- "$cur")) ;;
	FILE) COMPREPLY=($(compgen -f -- "$cur")) ;;
	PID) COMPREPLY=($(compgen -W "$(_dynftrace_all_pids)" -- "$cur")) ;;
	*) COMPREPLY=() ;;
	esac
}

_dynftrace()
{
	local exe=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} cmd i w
	local -a opts args
	COMPREPLY=()
	if [[ $exe == */* ]]; then
		[[ -x $exe ]] || return
	else
		exe=$(type -P "$exe") || return
	fi
	if ((COMP_CWORD == 1)); then
		COMPREPLY=($(compgen -W "$(_dynftrace_commands "$exe") --help --version" -- "$cur"))
		return
	fi
	cmd=${COMP_WORDS[1]}
	w=$(_dynftrace_commands "$exe")
	[[ " ${w//$'\n'/ } " == *" $cmd "* ]] || return

	# OPTION -> METAVAR and VALUES
	local -A meta vals
	local o m v
	while IFS=$'\t' read -r o m v; do
		opts+=("$o")
		meta[$o]=$m
		vals[$o]=$v
	done < <(_dynftrace_options "$exe" "$cmd")
	args=($(_dynftrace_args "$exe" "$cmd"))

	# Walk the words before the cursor: options and their values, "--",
	# the arguments (POS: their word indexes).
	local pos=() dashdash=0
	for ((i = 2; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if ((!dashdash)) && [[ $w == -* ]]; then
			if [[ $w == -- ]]; then
				dashdash=1
			elif [[ -n ${meta[$w]-} ]]; then
				# its value: "-d DIR", "--data=DIR" (= is a word of its own)
				[[ ${COMP_WORDS[i + 1]-} == = ]] && ((i++))
				((i++))
			fi
			continue
		fi
		pos+=("$i")
		# Past the program, the rest is its own command line.
		if [[ ${args[${#pos[@]} - 1]-} == PROG ]]; then
			if declare -F _command_offset >/dev/null; then
				_command_offset "$i"
			else
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return
		fi
	done

	# The value of an option
	local prev=${COMP_WORDS[COMP_CWORD - 1]}
	if [[ $cur == = ]]; then
		cur=
	elif [[ $prev == = ]] && ((COMP_CWORD > 2)); then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi
	if ((!dashdash)) && [[ -n ${meta[$prev]-} ]]; then
		_dynftrace_value "${meta[$prev]}" "${vals[$prev]}" "$cur"
		return
	fi
	if [[ $cur == -* ]] && ((!dashdash)); then
		COMPREPLY=($(compgen -W "${opts[*]}" -- "$cur"))
		return
	fi

	# The next argument
	local n=${#pos[@]} arg
	arg=${args[n]-}
	# the last one may repeat (PROG|LIB...)
	((n && ${#args[@]})) && [[ -z $arg && ${args[-1]} == *... ]] && arg=${args[-1]}
	case $arg in
	PROG)
		if [[ $cur == */* ]]; then
			COMPREPLY=($(compgen -f -- "$cur"))
		else
			COMPREPLY=($(compgen -c -- "$cur"))
		fi
		;;
	PID)
		if [[ $cmd == attach ]]; then
			COMPREPLY=($(compgen -W "$(_dynftrace_all_pids)" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_dynftrace_ctl_pids)" -- "$cur"))
		fi
		;;
	FILE)
		# ctl: the process's own list of files
		local pid=${COMP_WORDS[${pos[0]}]}
		COMPREPLY=($(compgen -W "$("$exe" ctl --timeout 1 "$pid" 2>/dev/null)" -- "$cur"))
		;;
	VALUE)
		local pid=${COMP_WORDS[${pos[0]}]} file=${COMP_WORDS[${pos[1]}]} list=
		case $file in
		current_tracer) list=$("$exe" ctl --timeout 1 "$pid" available_tracers 2>/dev/null) ;;
		tracing_on | */enable) list="0 1" ;;
		set_ftrace_filter | set_ftrace_notrace | set_graph_function | set_graph_notrace)
			list=$("$exe" ctl --timeout 1 "$pid" available_filter_functions 2>/dev/null)
			;;
		esac
		COMPREPLY=($(compgen -W "$list" -- "$cur"))
		;;
	DIR*) COMPREPLY=($(compgen -d -- "$cur")) ;;
	*PROG* | *LIB* | *FILE*) COMPREPLY=($(compgen -f -- "$cur")) ;;
	esac
} &&
	complete -F _dynftrace dynftrace
