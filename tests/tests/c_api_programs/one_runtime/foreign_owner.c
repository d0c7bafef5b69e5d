/* Claims the process before Metron does, as a copy of Metron with another ABI version would:
 * a constructor of priority 101 (which runs before default-priority constructors such as
 * Metron's) maps the claim page at its documented address with ABI version 999. Metron must
 * refuse to join, say so, and record separately: the 10 "own" regions still reach a run
 * folder. Layout: metron::shared_runtime::abi::ClaimPage. */
#define _GNU_SOURCE
#include <metron/metron.h>

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define CLAIM_ADDRESS ((void*)0x6d6574720000ULL)

struct claim_page {
    uint64_t magic;
    uint32_t abi_version;
    uint32_t page_bytes;
    uint32_t pid;
    uint32_t joined;
    char build[192];
    char tick_source[32];
    const void* api;
};

__attribute__((constructor(101))) static void claim_first(void) {
    struct claim_page* page = mmap(CLAIM_ADDRESS, 4096, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (page == MAP_FAILED) return;
    page->abi_version = 999;
    page->page_bytes = sizeof *page;
    strcpy(page->build, "metron 9.9.9 (a future Metron)");
    strcpy(page->tick_source, "tsc");
    memcpy(&page->magic, "METRONrt", 8);
}

int main(void) {
    int i;
    for (i = 0; i < 10; i++) {
        metron_region_begin("own");
        metron_region_end("own");
    }
    return 0;
}
