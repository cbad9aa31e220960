# oracle.awk - the sites a build should have, from binutils output only.
# Independent of lib/core/elf.c on purpose; see tests/sh/sites-matrix.sh for how
# the input lines are produced. Input, one fact per line:
#   R KIND WHERE VALUE     a record entry (hex) at WHERE in a record section
#   L WHERE ADDEND         an R_X86_64_RELATIVE relocation (readelf -rW)
#   F ADDR SIZE BIND NAME  a defined FUNC/IFUNC symbol of .symtab
#   I ADDR B0 B1 B2 B3     the first bytes of the instruction at ADDR
# Output: "ADDR LEN KIND NAME" per site (ADDR 16 hex digits), unsorted.
# The rules are those of lib/core/elf.h: a record outside every function but at
# most 16 bytes before one is the prefix-pad case (site = the function); an
# endbr64 at the site is skipped; "ff 15" / "67 e8" make a 6-byte site.
# Plain POSIX awk (mawk): hex is converted by hand.

function hex2num(s,    i, n, c)
{
	s = tolower(s)
	sub(/^0x/, "", s)
	n = 0
	for (i = 1; i <= length(s); i++) {
		c = index("0123456789abcdef", substr(s, i, 1))
		if (c == 0)
			return -1
		n = n * 16 + c - 1
	}
	return n
}

function num2hex(n,    s, d)
{
	s = ""
	while (n > 0) {
		d = n % 16
		s = substr("0123456789abcdef", d + 1, 1) s
		n = (n - d) / 16
	}
	while (length(s) < 16)
		s = "0" s
	return s
}

$1 == "R" { nrec++; rkind[nrec] = $2; rwhere[nrec] = hex2num($3); rval[nrec] = hex2num($4) }
$1 == "L" { rel[hex2num($2)] = hex2num($3) }
$1 == "F" {
	nf++; fa[nf] = hex2num($2); fs[nf] = ($3 ~ /^0x/) ? hex2num($3) : $3 + 0
	fg[nf] = ($4 != "LOCAL"); fn[nf] = $5
}
$1 == "I" { ins[hex2num($2)] = $3 " " $4 " " $5 " " $6 }

# Index of the function whose [start, start + size) holds A (EXT: size 0
# extends to the next function), preferring a global name; 0 if none.
function covering(a, ext,    i, j, best, sz, nxt)
{
	best = 0
	for (i = 1; i <= nf; i++) {
		sz = fs[i]
		if (sz == 0 && ext) {
			nxt = -1
			for (j = 1; j <= nf; j++)
				if (fa[j] > fa[i] && (nxt < 0 || fa[j] < nxt))
					nxt = fa[j]
			if (nxt > 0)
				sz = nxt - fa[i]
		}
		if (a >= fa[i] && a < fa[i] + sz)
			if (!best || (fg[i] && !fg[best]))
				best = i
	}
	return best
}

END {
	for (r = 1; r <= nrec; r++) {
		v = rval[r]
		if (rwhere[r] in rel)
			v = rel[rwhere[r]]
		site = v
		if (!covering(v, 0)) {
			nxt = -1
			for (i = 1; i <= nf; i++)
				if (fa[i] > v && fa[i] - v <= 16 && (nxt < 0 || fa[i] < nxt))
					nxt = fa[i]
			if (nxt > 0)
				site = nxt
		}
		if (ins[site] ~ /^f3 0f 1e fa/)
			site += 4
		len = (ins[site] ~ /^(ff 15|67 e8)/) ? 6 : 5
		f = covering(site, 1)
		name = f ? fn[f] : "0x" num2hex(site)
		if (!f)
			sub(/^0x0+/, "0x", name)
		line = num2hex(site) " " len " " rkind[r] " " name
		if (!(line in seen)) {
			seen[line] = 1
			print line
		}
	}
}
