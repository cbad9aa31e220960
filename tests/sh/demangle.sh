#!/usr/bin/env bash
# description: the C++ demangler against c++filt: every symbol of libstdc++ and of a C++ test program, hand-made forms; simple names short and readable
# config: asan
#
# tests/demangle/check.c is built with lib/core/demangle.c (ASan in the
# asan configuration) and reads symbols: every C++ symbol libstdc++.so.6
# exports (nm -D), every C++ symbol of tests/demangle/names.cc built by
# g++ and clang++ (nm: containers, templates, lambdas, operators, thunks,
# typeinfo, guard variables), and a list of forms written here. For each:
#   - the full style equals c++filt's output wherever it gives one (a
#     refusal is allowed: the symbol is then shown as it is: expressions
#     are refused in the full style), and every libstdc++ symbol is
#     accepted;
#   - the simple style is never longer than the full one, holds no '<'
#     of a template argument list nor a parameter list, and is given for
#     every symbol c++filt demangles in the list below;
#   - a few simple names are exactly what a reader expects
#     (std::map::insert for the 600-character enable_if symbol).
# Env: TOP CC SAN.
. "$(dirname "$0")/../gen/common.sh"

if ! command -v c++filt >/dev/null || ! command -v nm >/dev/null; then
	skip "c++filt or nm is not installed (binutils)"
	exit 0
fi
D=$TOP/tests/demangle
# shellcheck disable=SC2086
if ! $CC $CFLAGS_T $SANFLAGS -I"$TOP/lib/core" "$D/check.c" "$TOP/lib/core/demangle.c" \
	-o "$T/check" 2>"$T/build.log"; then
	notok "build the demangler's checker"
	diag_file "$T/build.log"
	exit 1
fi

# compare NAME FILE MUST_ACCEPT: full vs c++filt, simple's rules
compare() {
	local name=$1 f=$2 must=$3
	c++filt <"$f" >"$T/cf" || return 1
	"$T/check" <"$f" >"$T/mine" || {
		notok "$name: the checker failed (exit $?)"
		return 1
	}
	paste -d '\t' "$f" "$T/cf" "$T/mine" >"$T/all"
	local n acc diff refused long
	n=$(wc -l <"$f")
	# c++filt gives the symbol back when it cannot demangle it
	acc=$(awk -F'\t' '$3 != "!"' "$T/all" | wc -l)
	diff=$(awk -F'\t' '$3 != "!" && $2 != $1 && $3 != $2' "$T/all" | tee "$T/diff" | wc -l)
	refused=$(awk -F'\t' '$3 == "!" && $2 != $1' "$T/all" | tee "$T/refused" | wc -l)
	if [ "$diff" -eq 0 ]; then
		ok "$name: $acc of $n symbols demangled as c++filt does"
	else
		notok "$name: $diff symbols demangled otherwise than c++filt (symbol, c++filt, ours)"
		diag_file "$T/diff" 10
	fi
	if [ -n "$must" ]; then
		if [ "$refused" -eq 0 ]; then
			ok "$name: none refused"
		else
			notok "$name: $refused symbols that c++filt reads are refused"
			diag_file "$T/refused" 10
		fi
	fi
	# simple: never longer than full, no template arguments, no parameters
	long=$(awk -F'\t' '$3 != "!" && $4 != "!" && length($4) > length($3)' "$T/all" | wc -l)
	if [ "$long" -eq 0 ]; then
		ok "$name: simple names are never longer than full ones"
	else
		notok "$name: $long simple names longer than the full one"
		awk -F'\t' '$3 != "!" && $4 != "!" && length($4) > length($3)' "$T/all" >"$T/long"
		diag_file "$T/long" 5
	fi
	# a '<' that opens template arguments (not operator<, operator<<) or a
	# '(' that opens parameters (not operator(), {lambda()#1}, (anonymous ...))
	# (conversion operators and decltype(nullptr) name types: left out)
	awk -F'\t' '$4 != "!"' "$T/all" | cut -f4 | grep -v 'operator [^nd]' |
		sed -e 's/decltype(nullptr)/D/g' -e 's/operator<<=\|operator<<\|operator<=>\|operator<=\|operator</OP/g' \
			-e 's/operator()/OP/g' -e 's/{lambda()#[0-9]*}/L/g' \
			-e 's/(anonymous namespace)/A/g' | grep -n '[<(]' >"$T/bad"
	if [ ! -s "$T/bad" ]; then
		ok "$name: simple names hold no template arguments or parameters"
	else
		notok "$name: simple names with template arguments or parameters"
		diag_file "$T/bad" 5
	fi
}

# libstdc++: every exported C++ symbol
lib=$(g++ -print-file-name=libstdc++.so.6 2>/dev/null)
[ -f "$lib" ] || lib=$(ls /usr/lib/*/libstdc++.so.6 2>/dev/null | head -1)
if [ -f "$lib" ]; then
	nm -D --defined-only "$lib" | awk '{ print $NF }' | sed 's/@.*//' | grep '^_Z' | sort -u \
		>"$T/libstdc++.txt"
	compare "libstdc++ ($(wc -l <"$T/libstdc++.txt") symbols)" "$T/libstdc++.txt" must
else
	skip "libstdc++.so.6 not found"
fi

# the test program, by each C++ compiler there is
for cxx in g++ clang++; do
	command -v $cxx >/dev/null || {
		skip "$cxx is not installed"
		continue
	}
	if ! $cxx -std=c++17 -O0 -g "$D/names.cc" -o "$T/names-$cxx" 2>"$T/build-$cxx.log"; then
		notok "build tests/demangle/names.cc with $cxx"
		diag_file "$T/build-$cxx.log"
		continue
	fi
	# (the versions nm adds to undefined symbols are not the symbols')
	nm "$T/names-$cxx" | awk '{ print $NF }' | sed 's/@.*//' | grep '^_Z' | sort -u \
		>"$T/names-$cxx.txt"
	compare "names.cc by $cxx" "$T/names-$cxx.txt"
done

# forms written here: declarators, literals, packs, special names, clones
cat >"$T/forms.txt" <<'EOF'
_Z1fILi5EEvv
_Z1fILj5EEvv
_Z1fILc97EEvv
_Z1fILb1EEvv
_Z1fILb0EEvv
_Z1fILDnEEvv
_Z1fIL_Z1gvEEvv
_Z1fILl5EEvv
_Z1fILin5EEvv
_Z1fILs5EEvv
_Z1fILx5EEvv
_Z1fILy5EEvv
_Z1fILm5EEvv
_ZNSsC1Ev
_ZNSoD0Ev
_Z1fIJicEEvDpT_
_Z1fIJEEvDpT_
_Z1fIiEvT_DpT_
_Z1fDpPi
_ZN1AcviEv
_Z1fPFvvE
_Z1fIiEPFvvET_
_Z1fPA5_i
_Z1fRA_i
_Z1fPFPFivEvE
_Z1fA5_PFivE
_Z1fRKPFvvE
_Z1fPKPVi
_Z1fPrKi
_Z1fOi
_Z1fz
_Z1fM1AFvvE
_Z1fM1AKFvvE
_Z1fPDoFvvE
_ZN1AIiEC1Ev
_ZN1AC2ERKS_
_ZN1AD2Ev
_ZZ4mainENKUliE_clEi
_ZNKSt8functionIFvvEEclEv
_ZN1A1BUlvE_clEv
_ZZN1A1fEvENKUlvE0_clEv
_ZN1AUt0_E
_Z1gN1AUt_ES0_
_Z1gZ1fvEUlvE_S_
_ZlsRSoRKSs
_ZNK1AIiEltIiEEbv
_ZN1AlsIiEEvv
_ZNSt6vectorIiSaIiEE9push_backERKi
_ZNSt3mapIiiSt4lessIiESaISt4pairIKiiEEEixEOi
_ZSt4moveIRiEONSt16remove_referenceIT_E4typeEOS2_
_Z1fIiLi3EEvRAT0__T_
_ZN5Outer5InnerIiE1gIcEEvT_
_ZdlPv
_Znwm
_ZdaPvm
_ZN1AaSEOS_
_ZNKR1A1fEv
_ZNO1A1fEv
_ZNVK1A1fEv
_Z1fDv4_f
_Z1fICiEvv
_ZTIi
_ZTSN1AE
_ZTVN1AE
_ZTTN1AE
_ZTHN1A1xE
_ZTWN1A1xE
_ZGVZ4mainE1x
_ZGRZ4mainE1x_
_ZGTtN1A1fEv
_ZTv0_n24_N1A1fEv
_ZThn8_N1A1fEv
_ZN12_GLOBAL__N_11fEv
_Z1fB5cxx11v
_ZZ4mainE1x_0
_ZZ1fIiEvvE1x
_Z1fv.cold
_Z1fv.constprop.0.isra.0
_ZNKSt9basic_iosIcSt11char_traitsIcEEcvbEv
_ZN1A1fEUlvE_
EOF
compare "hand-made forms" "$T/forms.txt"

# simple names a reader expects
printf '%s\t%s\n' \
	'_ZNSt3mapINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEiSt4lessIS5_ESaISt4pairIKS5_iEEE6insertIS8_IS5_iEEENSt9enable_ifIXsrSt16is_constructibleISA_JT_EE5valueES8_ISt17_Rb_tree_iteratorISA_EbEE4typeEOSH_' 'std::map::insert' \
	'_ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE24_M_get_insert_unique_posERS1_' 'std::_Rb_tree::_M_get_insert_unique_pos' \
	'_ZZ4mainENKUliE_clEi' 'main::{lambda()#1}::operator()' \
	'_ZNSsC1Ev' 'std::basic_string::basic_string' \
	'_ZN12_GLOBAL__N_11fEv' '(anonymous namespace)::f' \
	'_ZNK1AIiEltIiEEbv' 'A::operator<' \
	'_Z1fv.cold' 'f' \
	'_ZTVN1AIiEE' 'vtable for A' >"$T/expect"
cut -f1 "$T/expect" | "$T/check" | cut -f2 | paste -d '\t' "$T/expect" - |
	awk -F'\t' '$2 != $3 { print $2 " expected, got " $3 }' >"$T/wrong"
if [ ! -s "$T/wrong" ]; then
	ok "simple names: $(wc -l <"$T/expect") symbols read as expected (std::map::insert ...)"
else
	notok "simple names other than expected"
	diag_file "$T/wrong"
fi

# not C++, or broken: refused, never a crash
printf '%s\n' main _Z _ZN _ZN1A _Z1 _Z999999999f '_ZSt' '_Z1fIT_Ev' \
	'_Z1fS_' "_Z$(printf 'P%.0s' $(seq 1 400))i" >"$T/junk"
"$T/check" <"$T/junk" >"$T/junk.out"
rc=$?
if [ $rc -eq 0 ] && ! grep -qv '^!	!$' "$T/junk.out"; then
	ok "malformed symbols are refused in both styles, without a crash"
else
	notok "malformed symbols: exit $rc, or demangled"
	paste "$T/junk" "$T/junk.out" >"$T/j"
	diag_file "$T/j"
fi
tap_end
