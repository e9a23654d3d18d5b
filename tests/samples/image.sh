# docs/fleet.md's mounted system image: the captured machine of
# tests/fixtures/samples/vm, whose etc/hostname says build-img-3.
cp -R "$(dirname "$0")/../fixtures/samples/vm/." "$D/"
echo build-img-3 > "$D/etc/hostname"
