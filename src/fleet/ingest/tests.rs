use super::*;
use anyhow::Result;

fn read(name: &str, text: &str, skip_bad: bool) -> Result<(Fleet, IngestReport)> {
    let mut f = Fleet::default();
    let mut r = IngestReport::default();
    let opts = IngestOptions {
        skip_bad,
        threads: 2,
        ..Default::default()
    };
    ingest(name, Box::new(text.as_bytes()), &opts, &mut f, &mut r)?;
    r.finish();
    Ok((f, r))
}

#[test]
fn kirkland_columns_are_kib_and_available_is_estimated() {
    let (f, r) = read(
        "k.tsv",
        "1\t16\t4000000\t3000000\t1000000\t100\t200\t300\t2000\t0\t2000\t42\n",
        false,
    )
    .unwrap();
    assert_eq!(r.files[0].format, Format::Kirkland);
    let h = f.record(0);
    assert_eq!(h.host, "1");
    assert_eq!(h.tmp_used_bytes, 16 * 1024);
    assert_eq!(h.mem_total_bytes, 4_000_000 * 1024);
    assert_eq!(h.mem_available_bytes, Some((1_000_000 + 200 + 300) * 1024));
    assert_eq!(h.swap_free_bytes, Some(2000 * 1024));
    assert_eq!(h.tmp_inodes, Some(42));
}

#[test]
fn kirkland_header_row_is_skipped_but_not_later_ones() {
    let text = "host\ttmp\ttotal\tused\tfree\tshared\tbuffers\tcached\tst\tsu\tsf\tinodes\n\
                    a\t4\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\n\
                    host\ttmp\ttotal\tused\tfree\tshared\tbuffers\tcached\tst\tsu\tsf\tinodes\n";
    let e = read("k", text, false).unwrap_err().to_string();
    assert!(e.starts_with("k:3: not a number: /tmp KiB \"tmp\""), "{e}");
}

#[test]
fn json_snapshot_picks_the_chosen_path() {
    let l = r#"{"schema_version":1,"host":"h\u00e9","timestamp_unix_s":5,"kernel":"x","paths":[{"path":"/var/tmp","used_bytes":9,"inodes":1},{"path":"/tmp","used_bytes":4096,"inodes":3}],"mem_total_bytes":1000000,"mem_available_bytes":500000,"swap_total_bytes":0,"swap_free_bytes":0}"#;
    let (f, _) = read("j", l, false).unwrap();
    let h = f.record(0);
    assert_eq!(
        (h.host.as_str(), h.tmp_used_bytes, h.tmp_inodes),
        ("hé", 4096, Some(3))
    );
    assert_eq!(h.timestamp_unix_s, Some(5));
}

#[test]
fn malformed_json_names_file_line_and_problem() {
    let good = r#"{"host":"a","tmp_used_bytes":1,"mem_total_bytes":10}"#;
    let text = format!(
        "{good}\n\n{good}\n{{\"host\":\"b\",\"tmp_used_bytes\":\"x\",\"mem_total_bytes\":10}}\n"
    );
    let e = read("in.jsonl", &text, false).unwrap_err().to_string();
    assert!(
        e.starts_with("in.jsonl:4: wrong or missing JSON field: invalid type"),
        "{e}"
    );
    assert!(e.contains("--skip-bad"));
    let (f, r) = read("in.jsonl", &format!("{text}{{not json\n"), true).unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(r.skipped, 2);
    assert_eq!(r.skip_reasons.len(), 2);
    assert!(
        r.skip_reasons
            .iter()
            .any(|s| s.first.starts_with("in.jsonl:5: ")),
        "{:?}",
        r.skip_reasons
    );
}

#[test]
fn line_numbers_survive_block_boundaries() {
    // Enough lines to span several 4 MiB blocks and both threads.
    let good =
        r#"{"host":"hostname-padding-padding-padding","tmp_used_bytes":1,"mem_total_bytes":10}"#;
    let n = 200_000;
    let mut text = String::new();
    for _ in 0..n {
        text.push_str(good);
        text.push('\n');
    }
    text.push_str("{\"host\":\"z\",\"mem_total_bytes\":10}\n");
    let e = read("big", &text, false).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("big:{}: no usage figure", n + 1)),
        "{e}"
    );
    let (f, r) = read("big", &text, true).unwrap();
    assert_eq!(f.len(), n);
    assert_eq!(r.files[0].lines, n as u64 + 1);
}

#[test]
fn csv_with_header_any_order_and_kb_columns() {
    let text = "mem_total_kb,host,tmp_used_bytes,swap_total_bytes,swap_used_bytes,extra\n\
                    1000,\"web,1\",4096,100,40,zzz\n\
                    1000,web2,,100,40,zzz\n";
    let e = read("c.csv", text, false).unwrap_err().to_string();
    assert!(e.starts_with("c.csv:3: missing value"), "{e}");
    let (f, r) = read("c.csv", text, true).unwrap();
    assert_eq!(r.files[0].format, Format::Csv);
    let h = f.record(0);
    assert_eq!(h.host, "web,1");
    assert_eq!(h.mem_total_bytes, 1_024_000);
    assert_eq!(h.swap_free_bytes, Some(60));
    assert!(
        read("c.csv", "a,b\n1,2\n", false)
            .unwrap_err()
            .to_string()
            .contains("must name at least")
    );
}

#[test]
fn inconsistent_figures_are_rejected() {
    let e = read("j", r#"{"host":"a","tmp_used_bytes":1,"mem_total_bytes":10,"swap_total_bytes":1,"swap_free_bytes":5}"#, false)
            .unwrap_err()
            .to_string();
    assert!(e.contains("inconsistent swap"), "{e}");
    let e = read(
        "j",
        r#"{"host":"a","tmp_used_bytes":1,"mem_total_bytes":0}"#,
        false,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("zero RAM"), "{e}");
    let e = read("j", "what is this\n", false).unwrap_err().to_string();
    assert!(e.contains("cannot tell the format"), "{e}");
}

#[test]
fn dedup_in_hash_slices_matches_dedup_in_one_go() {
    let mut text = String::new();
    for i in 0..3000u64 {
        // Names repeat 1..=4 times, timestamps tie or differ, some have none.
        let h = i % 1300;
        let ts = if i % 7 == 0 {
            String::new()
        } else {
            format!(",\"timestamp_unix_s\":{}", (i * 37) % 11)
        };
        text.push_str(&format!(
            "{{\"host\":\"h{h}\"{ts},\"tmp_used_bytes\":{i},\"mem_total_bytes\":10}}\n"
        ));
    }
    let (mut one, _) = read("d", &text, false).unwrap();
    let (n1, ex1) = one.dedup_sliced(50, usize::MAX);
    assert_eq!(n1, 3000 - 1300);
    assert_eq!(ex1.len(), 50);
    for keys in [1, 100, 1000] {
        let (mut sliced, _) = read("d", &text, false).unwrap();
        assert_eq!(sliced.dedup_sliced(50, keys), (n1, ex1.clone()), "{keys}");
        let all = |f: &Fleet| (0..f.len()).map(|i| f.record(i)).collect::<Vec<_>>();
        assert_eq!(all(&sliced), all(&one), "{keys}");
    }
}

#[test]
fn duplicate_examples_name_the_right_lines_across_gaps_and_files() {
    let mut f = Fleet::default();
    let mut r = IngestReport::default();
    let opts = IngestOptions {
        skip_bad: true,
        threads: 2,
        ..Default::default()
    };
    let j = |h: &str, t: u64| {
        format!(
            "{{\"host\":\"{h}\",\"timestamp_unix_s\":{t},\"tmp_used_bytes\":1,\"mem_total_bytes\":10}}\n"
        )
    };
    // Lines 1, 2 (blank), 3 (comment), 4, 5 (bad), 6.
    let a = format!(
        "{}\n# note\n{}not json\n{}",
        j("x", 1),
        j("y", 1),
        j("z", 1)
    );
    ingest("a", Box::new(a.as_bytes()), &opts, &mut f, &mut r).unwrap();
    // A quoted name over two lines: the next record starts on line 4.
    let c = "host,tmp_used_bytes,mem_total_bytes,timestamp_unix_s\n\"multi\nline\",1,10,1\nz,1,10,5\ny,1,10,0\n";
    ingest("c", Box::new(c.as_bytes()), &opts, &mut f, &mut r).unwrap();
    f.push(
        &HostRecord {
            host: "x".into(),
            timestamp_unix_s: Some(9),
            tmp_used_bytes: 1,
            tmp_inodes: None,
            mem_total_bytes: 10,
            mem_available_bytes: None,
            mem_free_bytes: None,
            swap_total_bytes: None,
            swap_free_bytes: None,
        },
        "prometheus",
        0,
    )
    .unwrap();
    let (n, mut ex) = f.dedup(10);
    assert_eq!(n, 3);
    ex.sort();
    assert_eq!(
        ex,
        [
            "x: kept prometheus:0 (t=9), dropped older a:1",
            "y: kept a:4 (t=1), dropped older c:5",
            "z: kept c:4 (t=5), dropped older a:6",
        ]
    );
    assert_eq!(f.record(0).timestamp_unix_s, None, "timestamps are freed");
}

#[test]
fn row_stays_small() {
    // 10 million hosts: each byte here is 10 MB of peak memory. Seven
    // figures (MemFree among them, for the study's own fit model) and a name.
    assert_eq!(std::mem::size_of::<Row>(), 64);
}

#[test]
fn duplicates_keep_the_newest_then_the_last_read() {
    let text = r#"{"host":"a","timestamp_unix_s":20,"tmp_used_bytes":2,"mem_total_bytes":10}
{"host":"b","tmp_used_bytes":1,"mem_total_bytes":10}
{"host":"a","timestamp_unix_s":10,"tmp_used_bytes":1,"mem_total_bytes":10}
{"host":"b","tmp_used_bytes":3,"mem_total_bytes":10}
"#;
    let (mut f, _) = read("d", text, false).unwrap();
    let (n, ex) = f.dedup(10);
    assert_eq!(n, 2);
    assert_eq!(f.len(), 2);
    let mut got: Vec<(String, u64)> = (0..2)
        .map(|i| (f.record(i).host, f.record(i).tmp_used_bytes))
        .collect();
    got.sort();
    assert_eq!(got, [("a".to_string(), 2), ("b".to_string(), 3)]);
    assert!(
        ex.iter()
            .any(|e| e.starts_with("a: kept d:1 (t=20), dropped older d:3")),
        "{ex:?}"
    );
}

#[test]
fn a_bad_first_survey_line_is_a_bad_line_not_a_header() {
    let rest = "b\t4\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\n";
    for bad in ["-1", "NaN", "1e400"] {
        let text = format!("a\t{bad}\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\n{rest}");
        let e = read("k.tsv", &text, false).unwrap_err().to_string();
        assert!(e.starts_with("k.tsv:1: not a number: /tmp KiB"), "{e}");
        let (f, r) = read("k.tsv", &text, true).unwrap();
        assert_eq!((f.len(), r.skipped), (1, 1), "{bad}");
        assert!(r.skip_reasons[0].first.starts_with("k.tsv:1: "));
    }
}

#[test]
fn errors_quote_binary_garbage_short_and_escaped() {
    let mut garbage: Vec<u8> = (0u8..=255).cycle().take(600).collect();
    garbage.retain(|b| *b != b'\n' && *b != b',' && *b != b'"');
    // A CSV header of garbage, and a survey line with a garbage figure.
    let csv = [b"host,".as_slice(), &garbage, b"\n"].concat();
    let tsv = [
        b"h\t".as_slice(),
        &garbage
            .iter()
            .map(|b| if *b == b'\t' || *b == b' ' { b'x' } else { *b })
            .collect::<Vec<_>>(),
        b"\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\n",
    ]
    .concat();
    for (name, input) in [("g.csv", csv), ("g.tsv", tsv)] {
        let mut f = Fleet::default();
        let mut r = IngestReport::default();
        let e = ingest(
            name,
            Box::new(&input[..]),
            &IngestOptions::default(),
            &mut f,
            &mut r,
        )
        .unwrap_err()
        .to_string();
        assert!(e.len() < 400, "{name}: {} bytes: {e}", e.len());
        assert!(!e.chars().any(|c| c.is_control()), "{name}: {e:?}");
    }
}

#[test]
fn names_in_order_skip_the_hashing_and_a_repeat_in_order_is_still_dropped() {
    let line = |h: &str, t: u64| format!("{h}\t{t}\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\n");
    let sorted: String = ["a", "b", "c"].iter().map(|h| line(h, 4)).collect();
    let (mut f, _) = read("s", &sorted, false).unwrap();
    assert_eq!(f.dedup(10), (0, vec![]));
    assert_eq!(f.len(), 3);
    // Equal neighbours are not strictly rising: the full dedup runs and keeps the last read.
    let repeat = [line("a", 4), line("b", 4), line("b", 8), line("c", 4)].concat();
    let (mut f, _) = read("r", &repeat, false).unwrap();
    let (n, ex) = f.dedup(10);
    assert_eq!((n, f.len()), (1, 3));
    assert_eq!(ex, ["b: kept r:3, dropped older r:2"]);
    assert_eq!(f.record(1).tmp_used_bytes, 8 * 1024);
}

#[test]
fn mem_free_is_read_from_every_format() {
    let opts = IngestOptions::default();
    let mut f = Fleet::default();
    let mut r = IngestReport::default();
    // Kirkland TSV: column 5 is free(1)'s "free", in KiB.
    let t = "a\t4\t1000\t600\t300\t0\t50\t100\t0\t0\t0\t7\n";
    ingest("t", Box::new(t.as_bytes()), &opts, &mut f, &mut r).unwrap();
    let j = r#"{"host":"b","tmp_used_bytes":1,"mem_total_bytes":100,"mem_free_bytes":42}"#;
    ingest("j.jsonl", Box::new(j.as_bytes()), &opts, &mut f, &mut r).unwrap();
    let c = "host,tmp_used_bytes,mem_total_bytes,mem_free_bytes\nc,1,100,43\n";
    ingest("c.csv", Box::new(c.as_bytes()), &opts, &mut f, &mut r).unwrap();
    let free: Vec<_> = (0..f.len()).map(|i| f.record(i).mem_free_bytes).collect();
    assert_eq!(free, [Some(300 * 1024), Some(42), Some(43)]);
    // More free than total is not a real host.
    let bad = r#"{"host":"d","tmp_used_bytes":1,"mem_total_bytes":100,"mem_free_bytes":101}"#;
    assert!(ingest("d.jsonl", Box::new(bad.as_bytes()), &opts, &mut f, &mut r).is_err());
}

/// Everything a read gives that output shows: hosts, the report, the
/// duplicate examples (which quote lines), or the error.
fn csv_outcome(text: &[u8], skip_bad: bool, block: Option<usize>) -> String {
    let opts = IngestOptions {
        skip_bad,
        threads: 3,
        ..Default::default()
    };
    let mut f = Fleet::default();
    let mut r = IngestReport::default();
    let res = match block {
        Some(b) => driver::ingest_blocks("c.csv", Box::new(text), &opts, &mut f, &mut r, b),
        None => {
            // The `csv` reader alone, from the header on: the reference.
            f.sources.push("c.csv".into());
            let mut fr = FileReport {
                name: "c.csv".into(),
                format: Format::Csv,
                lines: 0,
                records: 0,
                skipped: 0,
            };
            let res = csv::ingest("c.csv", 0, text, &opts, &mut f, &mut r, &mut fr, None);
            r.records += fr.records;
            r.files.push(fr);
            res
        }
    };
    if let Err(e) = res {
        return format!("error: {e:#}");
    }
    r.finish();
    let hosts: Vec<HostRecord> = (0..f.len()).map(|i| f.record(i)).collect();
    let dups = f.dedup(100);
    format!("{hosts:?}\n{:?}\n{:?}\n{dups:?}", r.files, r.skip_reasons)
}

#[test]
fn csv_read_in_parallel_blocks_equals_the_csv_reader_line_for_line() {
    let head = "host,tmp_used_kb,mem_total_kb,timestamp_unix_s,mem_free_kb\n";
    let rows = [
        "a,4,1000,5,100\n",
        "b,8,1000,,\n",
        "\n",
        "# a comment, with a comma\n",
        "a,12,1000,7,100\n",
        "c,x,1000,1,1\n",
        "d,4\n",
        "  e , 4 , 1000 ,3, 9 ,extra,more\n",
        "b,16,1000,9,2000\n",
        "\n\n",
        "f,4,1000,1,1,,,,,,,,\n",
        "g,4,1000\n",
    ];
    let mut cases: Vec<Vec<u8>> = Vec::new();
    let body: String = rows.concat();
    for variant in 0..6 {
        let mut t = format!("{head}{body}");
        match variant {
            1 => t = t.replace('\n', "\r\n"),
            2 => t = format!("# leading comment\n\n{t}h,4,1000,1,1"),
            // Quotes part-way (a host name with a comma), and a line break in one.
            3 => t = format!("{t}\"q,1\",4,1000,2,1\n\"r\ns\",4,1000,2,1\nq,8,1000,3,1\n"),
            4 => t = format!("\"host\",tmp_used_kb,mem_total_kb\n{body}"),
            5 => t = t.replace("c,x", "c\rx"),
            _ => {}
        }
        cases.push(t.into_bytes());
    }
    for t in &cases {
        for skip_bad in [true, false] {
            let want = csv_outcome(t, skip_bad, None);
            // Format detection needs the first line in the first block.
            for block in [64, 71, 90, 128, 1 << 20] {
                let got = csv_outcome(t, skip_bad, Some(block));
                assert_eq!(got, want, "block {block}, skip_bad {skip_bad}, input {t:?}");
            }
        }
    }
    // The cases do reach the records past the first bad one.
    assert!(csv_outcome(&cases[0], true, None).contains("kept c.csv:"));
}

#[test]
fn the_progress_bar_counts_every_byte_read_and_small_inputs_get_none() {
    let text: String = (0..500)
        .map(|i| format!("h{i}\t4\t1000\t500\t500\t0\t0\t0\t0\t0\t0\t1\n"))
        .collect();
    let opts = IngestOptions {
        progress: indicatif::ProgressBar::hidden(),
        ..Default::default()
    };
    let (mut f, mut r) = (Fleet::default(), IngestReport::default());
    driver::ingest_blocks("p", Box::new(text.as_bytes()), &opts, &mut f, &mut r, 1000).unwrap();
    assert_eq!(f.len(), 500);
    assert_eq!(opts.progress.position(), text.len() as u64);
    assert!(read_bar(1 << 20).is_hidden());
}

/// Everything output shows from reading `text` as a file of that name (or
/// the error), mapped when `mapped`, else read as a stream.
fn file_outcome(name: &str, text: &[u8], mapped: bool, skip_bad: bool, block: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    assert_eq!(map::Map::new(&file).is_some(), text.len() >= 1 << 20);
    let opts = IngestOptions {
        skip_bad,
        threads: 3,
        progress: indicatif::ProgressBar::hidden(),
        ..Default::default()
    };
    let (mut f, mut r) = (Fleet::default(), IngestReport::default());
    let res = if mapped {
        driver::ingest_file_blocks(name, file, &opts, &mut f, &mut r, block)
    } else {
        driver::ingest_blocks(name, Box::new(file), &opts, &mut f, &mut r, block)
    };
    if let Err(e) = res {
        return format!("error: {e:#}");
    }
    assert_eq!(opts.progress.position(), text.len() as u64, "{name}");
    r.finish();
    let hosts: Vec<HostRecord> = (0..f.len()).map(|i| f.record(i)).collect();
    let dups = f.dedup(100);
    format!("{hosts:?}\n{:?}\n{:?}\n{dups:?}", r.files, r.skip_reasons)
}

#[test]
fn a_mapped_file_reads_like_a_stream_in_every_format() {
    let n = 30_000;
    let mut tsv = String::from("host\ttmp\tt\tu\tf\ts\tb\tc\tst\tsu\tsf\tinodes\n# note\n");
    let mut csv = String::from("host,tmp_used_kb,mem_total_kb,timestamp_unix_s\n");
    let mut jsonl = String::new();
    for i in 0..n {
        // Every 97th host repeats an earlier one; one line of each file is bad.
        let h = if i % 97 == 0 { i / 2 } else { i };
        let tmp = if i == n - 300 {
            "x".to_string()
        } else {
            (i % 4000).to_string()
        };
        tsv += &format!(
            "web-{h:06}.fleet.example.org\t{tmp}\t8000000\t500\t4000000\t0\t0\t0\t0\t0\t0\t{i}\n"
        );
        csv += &format!("web-{h:06}.fleet.example.org,{tmp},8000000,{}\n", i % 50);
        jsonl += &format!(
            "{{\"host\":\"web-{h:06}.fleet.example.org\",\"timestamp_unix_s\":{},\"tmp_used_bytes\":{},\"mem_total_bytes\":8000000}}\n",
            i % 50,
            if i == n - 300 { "-1".into() } else { tmp }
        );
    }
    // A quoted host name near the end: the `csv` reader takes over there.
    let quoted = csv.replace("web-029900.fleet.example.org,", "\"web,029900\",");
    for (name, text) in [
        ("m.tsv", tsv),
        ("m.csv", csv),
        ("q.csv", quoted),
        ("m.jsonl", jsonl),
    ] {
        assert!(
            text.len() >= 1 << 20,
            "{name} must be large enough to be mapped"
        );
        for skip_bad in [true, false] {
            for block in [4096, 100_000, 4 << 20] {
                let want = file_outcome(name, text.as_bytes(), false, skip_bad, block);
                let got = file_outcome(name, text.as_bytes(), true, skip_bad, block);
                assert_eq!(got, want, "{name}, block {block}, skip_bad {skip_bad}");
                assert_eq!(want.starts_with("error:"), !skip_bad, "{name}: {want:.200}");
            }
        }
    }
}

#[test]
fn many_lines_of_few_hosts_are_held_as_few_rows_while_reading() {
    // Three hosts over 600 Ki lines, timestamps in no order: the rows held
    // after reading follow the hosts (passes while reading), not the lines,
    // and the keepers are those one deduplication at the end would keep.
    let lines = 600 << 10;
    let mut text = String::with_capacity(lines * 80);
    let mut want = [(i64::MIN, 0u64); 3];
    for i in 0..lines as u64 {
        let h = (i * 7 % 3) as usize;
        let ts = ((i * 7919) % 1000) as i64;
        text.push_str(&format!(
            "{{\"host\":\"h{h}\",\"timestamp_unix_s\":{ts},\"tmp_used_bytes\":{i},\"mem_total_bytes\":10}}\n"
        ));
        // The newest, and of equal timestamps the last read.
        if ts >= want[h].0 {
            want[h] = (ts, i);
        }
    }
    let (mut f, _) = read("m", &text, false).unwrap();
    assert!(f.len() < lines / 2, "{} rows held for 3 hosts", f.len());
    let (n, ex) = f.dedup(5);
    assert_eq!((n, f.len()), (lines as u64 - 3, 3));
    let mut got: Vec<(String, u64)> = (0..3)
        .map(|i| (f.record(i).host, f.record(i).tmp_used_bytes))
        .collect();
    got.sort();
    let keepers: Vec<(String, u64)> = (0..3).map(|h| (format!("h{h}"), want[h].1)).collect();
    assert_eq!(got, keepers);
    // Examples name the final keeper, on the line it was read from.
    assert_eq!(ex.len(), 5);
    for e in &ex {
        let h: usize = e[1..2].parse().unwrap();
        let keep = format!(": kept m:{} (t={})", want[h].1 + 1, want[h].0);
        assert!(e.contains(&keep), "{e}: want {keep}");
    }
}
