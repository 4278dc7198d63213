// canary runs in a container of a target's image, with the preload and
// the environment its nodes get, before any node starts. It puts its own
// wall clock through the clock faults, writing the timestamp file named
// by its argument as the harness writes a node's (a jump each way, a
// strobe, a faster rate), while it waits on the monotonic clock the ways
// programs do: a sleep to a deadline, a condition variable that times
// out, a timer. It exits 0 if every wait lasted as long as it asked and
// its wall clock showed each skew; otherwise it says what went wrong on
// stderr and exits 1.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum { WAIT_NS = 10 * 1000 * 1000 };

static const char *file;                      // the timestamp file libfaketime follows
static _Atomic(const char *) fault = "no skew"; // the clock fault in effect
static atomic_bool done;                      // every fault healed
static atomic_int waits;                      // waits done: the watchdog's sign of life
static _Atomic(const char *) waiting_under;   // the fault the current wait began under

static void fail(const char *format, ...) {
	va_list args;
	va_start(args, format);
	fprintf(stderr, "canary: ");
	vfprintf(stderr, format, args);
	fprintf(stderr, "\n");
	va_end(args);
	_exit(1); // not exit: another thread may be failing too
}

static int64_t ns(struct timespec t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

static struct timespec timespec_of(int64_t ns) { return (struct timespec){ns / 1000000000, ns % 1000000000}; }

// now reads a clock through libc, as the program would: libfaketime skews
// CLOCK_REALTIME.
static int64_t now(clockid_t clock) {
	struct timespec t;
	clock_gettime(clock, &t);
	return ns(t);
}

// true_now reads a clock from the kernel itself, past libfaketime.
static int64_t true_now(clockid_t clock) {
	struct timespec t;
	syscall(SYS_clock_gettime, clock, &t);
	return ns(t);
}

// pause_ms sleeps without libfaketime, or this program's waits, in the way.
static void pause_ms(int ms) {
	struct timespec t = timespec_of(ms * 1000000LL);
	while (syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &t, &t) != 0 && errno == EINTR) {
	}
}

// skew sets the wall clock's offset as the harness does: a rename of the
// whole file. The wall clock must then show it.
static void skew(const char *name, double offset) {
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", file);
	FILE *f = fopen(tmp, "w");
	if (f == NULL || fprintf(f, "%+.3f\n", offset) < 0 || fclose(f) != 0 || rename(tmp, file) != 0)
		fail("cannot write %s: %s", file, strerror(errno));
	atomic_store(&fault, name);
	double off = (now(CLOCK_REALTIME) - true_now(CLOCK_REALTIME)) / 1e9;
	if (off < offset - 0.5 || off > offset + 0.5)
		fail("under %s the wall clock is %+.3f s off, not %+.3f s: libfaketime is not loaded, or does not follow %s",
		     name, off, offset, file);
}

// faults puts the wall clock through the harness's clock faults, then
// watches the waits: one that never ends is as broken as one that fails.
static void *faults(void *unused) {
	(void)unused;
	pause_ms(40);
	skew("a jump of +30 s", 30);
	pause_ms(60);
	skew("a jump of -30 s", -30);
	pause_ms(60);
	for (int i = 0; i < 12; i++) {
		skew(i % 2 ? "a strobe, on" : "a strobe, off", i % 2 ? 7.5 : 0);
		pause_ms(10);
	}
	for (int i = 0; i < 6; i++) { // 4x speed: 3 s more every real second
		skew("a rate of 4x", 3 * 0.02 * i);
		pause_ms(20);
	}
	skew("its heal", 0);
	atomic_store(&done, 1);
	for (int seen = -1; seen != atomic_load(&waits);) {
		seen = atomic_load(&waits);
		pause_ms(1000);
	}
	fail("a %d ms wait on the monotonic clock begun under %s has not ended after a second", WAIT_NS / 1000000,
	     atomic_load(&waiting_under));
	return NULL;
}

static int sleep_until(int64_t deadline) {
	struct timespec t = timespec_of(deadline);
	int rc;
	while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL)) == EINTR) {
	}
	return rc;
}

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;

static int wait_until(int64_t deadline) {
	struct timespec t = timespec_of(deadline);
	int rc;
	pthread_mutex_lock(&mutex);
	while ((rc = pthread_cond_timedwait(&cond, &mutex, &t)) == 0) { // no one signals
	}
	pthread_mutex_unlock(&mutex);
	return rc == ETIMEDOUT ? 0 : rc;
}

static int timer;

static int timer_until(int64_t deadline) {
	struct itimerspec t = {.it_value = timespec_of(deadline)};
	uint64_t expirations;
	if (timerfd_settime(timer, TFD_TIMER_ABSTIME, &t, NULL) != 0 || read(timer, &expirations, sizeof expirations) < 0)
		return errno;
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 2)
		fail("usage: canary TIMESTAMP_FILE (the one FAKETIME_TIMESTAMP_FILE names)");
	file = argv[1];
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &attr);
	if ((timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC)) < 0)
		fail("timerfd_create: %s", strerror(errno));
	const struct {
		const char *name;
		int (*until)(int64_t deadline);
	} kinds[] = {
		{"clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)", sleep_until},
		{"pthread_cond_timedwait on a CLOCK_MONOTONIC condition variable", wait_until},
		{"timerfd_settime(TFD_TIMER_ABSTIME) on a CLOCK_MONOTONIC timer", timer_until},
	};
	pthread_t watcher;
	pthread_create(&watcher, NULL, faults, NULL);
	for (int i = 0; !atomic_load(&done); i++) {
		const char *under = atomic_load(&fault);
		atomic_store(&waiting_under, under);
		int64_t begun = true_now(CLOCK_MONOTONIC), deadline = now(CLOCK_MONOTONIC) + WAIT_NS;
		int rc = kinds[i % 3].until(deadline);
		int64_t ended = true_now(CLOCK_MONOTONIC);
		if (rc != 0)
			fail("%s failed under %s: %s", kinds[i % 3].name, under, strerror(rc));
		if (ended - begun < WAIT_NS - 1000000)
			fail("%s ended after %.1f ms of %d under %s", kinds[i % 3].name, (ended - begun) / 1e6, WAIT_NS / 1000000, under);
		atomic_fetch_add(&waits, 1);
	}
	puts("canary: every wait on the monotonic clock lasted as long as asked, and the wall clock showed each skew");
	return 0;
}
