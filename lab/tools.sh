#!/usr/bin/env bash
# lab/tools.sh DIR — the programs pmscope's lab-guest tests drive, put into the guest payload
# by lab/stage.sh (issue 16): redis-server and redis-benchmark for `pmscope app redis`,
# fio for `pmscope fio`. The guest puts DIR/bin first in its PATH (lab/guest.sh).
#
# redis-server and redis-benchmark go in as they are: lab/vm.sh copies the shared libraries
# of every executable ELF file in the payload (15 MB for both).
#
# fio goes in lean. Debian's fio links the library of every I/O engine it was built with —
# librbd and librados (Ceph), libgfapi (GlusterFS), libnbd (whose libxml2 pulls in ICU),
# libibverbs and librdmacm (RDMA), libpmem and libpmemblk: 62 libraries, 84 MB — while
# pmscope runs only its `sync` engine, which needs libc, libm, libz, libnuma and libaio.
# fio is linked BIND_NOW, so every symbol it imports must resolve when it starts. So:
#   DIR/fio/fio      the real fio, mode 0644 (lab/vm.sh copies the libraries of executable
#                    files only, and would bring the 84 MB back)
#   DIR/fio/lib/     libz, libnuma, libaio (real), and for each engine library a stub with
#                    its soname defining exactly the symbols fio imports from it, at the
#                    versions fio asks for; each aborts with a sentence if an engine that
#                    needs it ever runs
#   DIR/bin/fio      runs DIR/fio/fio through the dynamic loader with --library-path
# The stubs are built with ${CC:-cc} here, as the stage builds its other C test programs.
set -euo pipefail
DIR=${1:?usage: lab/tools.sh DIR}
log() { printf 'lab/tools: %s\n' "$*" >&2; }
mkdir -p "$DIR/bin" "$DIR/fio/lib"

for p in redis-server redis-benchmark; do
	src=$(command -v "$p") || { log "$p is not installed (./dev setup installs it)"; exit 1; }
	cp -L "$src" "$DIR/bin/$p" # redis-server is a symlink to redis-check-rdb; the name matters
done

FIO=$(command -v fio) || { log "fio is not installed (./dev setup installs it)"; exit 1; }
cp -L "$FIO" "$DIR/fio/fio"
chmod 0644 "$DIR/fio/fio"
REAL=" libc.so.6 libm.so.6 libz.so.1 libnuma.so.1 libaio.so.1 " # what the sync engine uses
path_of() { ldd "$FIO" | awk -v l="$1" '$1 == l { print $3 }'; }
# fio's imports as `name` or `name@version`, and which library each version belongs to.
imports=$(readelf --dyn-syms -W "$FIO" | awk '$7 == "UND" && $8 != "" { print $8 }')
versions=$(readelf -V -W "$FIO" | awk '
	{ for (i = 1; i < NF; i++) { if ($i == "File:") f = $(i + 1); if ($i == "Name:" && f) print f, $(i + 1) } }')
# Symbols every real library defines: an unversioned import found there is not a stub's.
real_defined=$(for l in $REAL; do nm -D --defined-only "$(path_of "$l")" | awk '{ sub(/@.*/, "", $3); print $3 }'; done | sort -u)
stub_src=$(mktemp -d)
trap 'rm -rf "$stub_src"' EXIT
stubs=()
for lib in $(readelf -d "$FIO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
	path=$(path_of "$lib")
	[ -n "$path" ] || { log "ldd does not find fio's $lib"; exit 1; }
	case $REAL in *" $lib "*)
		case $lib in libc.so.* | libm.so.*) ;; *) cp -L "$path" "$DIR/fio/lib/$lib" ;; esac
		continue ;;
	esac
	own_versions=$(awk -v l="$lib" '$1 == l { print $2 }' <<<"$versions")
	defined=$(nm -D --defined-only "$path" | awk '{ sub(/@.*/, "", $3); print $3 }' | sort -u)
	c="$stub_src/$lib.c"
	vs="$stub_src/$lib.map"
	# The imports this library defines: versioned ones at a version fio asks of it, and
	# unversioned ones no real library defines. `name [version]` per line.
	picked=$(awk -v own=" $(echo $own_versions) " '
		FNR == 1 { f++ }
		f == 1 { def[$1] = 1; next }
		f == 2 { real[$1] = 1; next }
		{
			n = $0; v = ""; i = index($0, "@")
			if (i) { n = substr($0, 1, i - 1); v = substr($0, i + 1) }
			if (!(n in def)) next
			if (v != "") { if (index(own, " " v " ") == 0) next } else if (n in real) next
			print n, v
		}' <(echo "$defined") <(echo "$real_defined") <(echo "$imports"))
	[ -n "$picked" ] || { log "fio imports nothing from $lib: nothing to stub"; exit 1; }
	{
		printf '#include <stdio.h>\n#include <stdlib.h>\n'
		printf 'static void stub(const char *f) {\n'
		printf '\tfprintf(stderr, "fio in the pmscope lab guest: %%s of %s is a stub (only the sync engine is shipped)\\n", f);\n' "$lib"
		printf '\tabort();\n}\n'
		awk '{ printf "void %s(void) { stub(\"%s\"); }\n", $1, $1 }' <<<"$picked"
	} >"$c"
	awk 'NF == 2 { s[$2] = s[$2] " " $1 ";" } END { for (v in s) printf "%s {\n\tglobal:%s\n};\n", v, s[v] }' <<<"$picked" >"$vs"
	n=$(wc -l <<<"$picked")
	flags=()
	[ -s "$vs" ] && flags=("-Wl,--version-script=$vs")
	${CC:-cc} -shared -fPIC -O1 -o "$DIR/fio/lib/$lib" -Wl,-soname,"$lib" ${flags[@]+"${flags[@]}"} "$c"
	stubs+=("$lib ($n symbols)")
done
interp=$(readelf -l "$FIO" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
cat >"$DIR/bin/fio" <<EOF
#!/bin/sh
# Debian's fio with the libraries of its sync engine and stubs for the others (lab/tools.sh).
fio=\$(dirname "\$0")/../fio
exec $interp --library-path "\$fio/lib" "\$fio/fio" "\$@"
EOF
chmod 0755 "$DIR/bin/fio"
log "fio: real $(echo $REAL), stubs: ${stubs[*]}"
log "payload tools: $(du -sh "$DIR" | cut -f1)"
