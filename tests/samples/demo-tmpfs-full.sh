# demo-tmpfs.sh, then filled up: a write there fails with ENOSPC.
sh -e "$(dirname "$0")/demo-tmpfs.sh"
head -c 64M /dev/urandom > "$D/build/fill" 2>/dev/null || true
