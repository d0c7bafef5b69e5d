/* metron_info_iterate from C: prints one line per item, "kind|name|available|reason". */
#include <metron/metron.h>
#include <stdio.h>
#include <string.h>

static int print_item(const metron_info* info, void* user) {
    int* count = (int*)user;
    ++*count;
    printf("%u|%s|%s|%d|%s|%s\n", info->kind, info->device, info->name, info->available,
           info->expression, info->reason);
    return 0;
}

static int stop_at_first(const metron_info* info, void* user) {
    (void)info;
    ++*(int*)user;
    return 1;
}

int main(void) {
    int counters = 0, metrics = 0, traces = 0, first = 0;
    if (metron_info_iterate(NULL, METRON_INFO_COUNTER, print_item, &counters) != METRON_OK) return 1;
    if (metron_info_iterate("cpu", METRON_INFO_METRIC, print_item, &metrics) != METRON_OK) return 2;
    if (metron_info_iterate("cpu", METRON_INFO_TRACE, print_item, &traces) != METRON_OK) return 3;
    if (metron_info_iterate("cpu", METRON_INFO_COUNTER, stop_at_first, &first) != METRON_OK) return 4;
    if (first != 1) return 5;
    if (metron_info_iterate("gpu9", METRON_INFO_METRIC, print_item, &metrics) != METRON_ERROR_INVALID_ARGUMENT) return 6;
    printf("error|%s\n", metron_last_error());
    if (metron_info_iterate("cpu", 42, print_item, &metrics) != METRON_ERROR_INVALID_ARGUMENT) return 7;
    if (metron_info_iterate("cpu", METRON_INFO_METRIC, NULL, NULL) != METRON_ERROR_NULL_ARGUMENT) return 8;
    printf("counts|%d|%d|%d\n", counters, metrics, traces);
    return 0;
}
