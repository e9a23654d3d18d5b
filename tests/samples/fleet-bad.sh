# docs/fleet.md's bad input: ten good Kirkland lines, then one of 3 columns.
python3 "$(dirname "$0")/../../bench/fleet-gen.py" 10 --format kirkland --seed 7 > bad.tsv
printf 'web-11\t120\t99\n' >> bad.tsv
