//! JIT frames through perf maps: a C program maps executable memory, writes the same small
//! loop there twice, names the two copies `jit_hot` and `jit_cold` in `/tmp/perf-<pid>.map`
//! (the format CPython, Node, the JVM's perf-map-agent, .NET and LuaJIT write) and spends 3:1
//! of its CPU time in them. Under `metron sample`, the samples in that anonymous memory are
//! named from the map: the two functions' shares in `stacks.folded` are 75 % / 25 % within
//! ±5 points, and `metadata.json` reports the map's entries.

mod c_api_support;
use c_api_support::*;
use std::process::Command;

const JIT: &str = r#"#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static double cpu_s(void) {
    struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
/* mov rax, rdi; loop: dec rax; jnz loop; ret */
static const unsigned char LOOP[] = {0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3};
typedef void (*jit_fn)(long);
int main(void) {
    long page = sysconf(_SC_PAGESIZE);
    unsigned char* code = mmap(0, (size_t)page, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) return 2;
    /* The two copies at the same alignment, so that an iteration costs the same. */
    memcpy(code, LOOP, sizeof LOOP);
    memcpy(code + 256, LOOP, sizeof LOOP);
    if (mprotect(code, (size_t)page, PROT_READ | PROT_EXEC) != 0) return 3;
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    FILE* map = fopen(path, "w");
    if (!map) return 4;
    fprintf(map, "%lx %x jit_hot\n", (unsigned long)code, (unsigned)sizeof LOOP);
    fprintf(map, "%lx %x jit_cold\n", (unsigned long)(code + 256), (unsigned)sizeof LOOP);
    fclose(map);
    jit_fn hot = (jit_fn)(void*)code, cold = (jit_fn)(void*)(code + 256);
    double start = cpu_s();
    while (cpu_s() - start < 1.5) { hot(3000000); cold(1000000); }
    printf("%d\n", (int)getpid());
    return 0;
}
"#;

#[test]
fn samples_in_jit_code_are_named_from_the_perf_map_with_their_shares() {
    if !cfg!(target_arch = "x86_64") {
        println!("SKIP: the JIT code of this test is x86-64 machine code");
        return;
    }
    let dir = temp_dir("jit");
    let source = dir.join("jit.c");
    std::fs::write(&source, JIT).unwrap();
    let exe = dir.join("jit");
    let cc = Command::new("cc")
        .args(["-std=c99", "-O1", "-g", "-D_DEFAULT_SOURCE"])
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert_success(&cc, "cc jit.c");
    let runs = dir.join("runs");
    let out = Command::new(artifacts().metron())
        .args(["sample", "--freq", "1000", "--trace", "false", "-o"])
        .arg(runs.join("%exe%-%pid%"))
        .arg("--")
        .arg(&exe)
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    assert_success(&out, "metron sample -- ./jit");
    let pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));

    let folders = run_folders(&runs);
    assert_eq!(folders.len(), 1, "{folders:?}");
    let folded = std::fs::read_to_string(folders[0].join("stacks.folded")).unwrap();
    let (mut hot, mut cold, mut unknown) = (0u64, 0u64, 0u64);
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        match stack.rsplit(';').next().unwrap() {
            "jit_hot" => hot += n,
            "jit_cold" => cold += n,
            leaf if leaf.starts_with("[unknown]") => unknown += n,
            _ => {}
        }
    }
    let share = 100.0 * hot as f64 / (hot + cold) as f64;
    println!("jit_hot {hot}, jit_cold {cold}, [unknown] {unknown}: {share:.1} % hot");
    assert!(
        hot + cold >= 500,
        "too few samples in the JIT code:\n{folded}"
    );
    assert!(
        (70.0..=80.0).contains(&share),
        "hot share {share:.1} %, expected 75 ± 5"
    );
    assert!(
        unknown * 20 < hot + cold,
        "JIT code left unnamed:\n{folded}"
    );
    let metadata = read_json(&folders[0], "metadata.json");
    let jit = &metadata["outputs"]["stacks"]["jit"];
    assert_eq!(jit["perf_map_entries"], 2, "{jit}");
    // Distinct sampled addresses named from the map: at least one per function (a loop of a
    // few instructions gives 2 or 3 between runs).
    assert!(jit["frames"].as_u64().unwrap_or(0) >= 2, "{jit}");
    let _ = std::fs::remove_dir_all(&dir);
}
