// monotonic.so is preloaded just before libfaketime, which skews a node's
// wall clock, so that waits on a monotonic clock keep true time.
//
// Debian bookworm's libfaketime (0.9.10) leaves monotonic clocks true when
// asked (FAKETIME_DONT_FAKE_MONOTONIC=1), but still moves every deadline it
// sees as if it were on its faked clock, whose epoch is the wall clock's:
//   - clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) gets a deadline about
//     1.8e9 s in the past and fails with EINVAL (Python's time.sleep);
//   - pthread_cond_timedwait on a condition variable of CLOCK_MONOTONIC
//     gets one measured against a faked monotonic clock and times out at
//     once (the JVM's Thread.sleep and Object.wait spin);
//   - timerfd_settime(TFD_TIMER_ABSTIME) on a monotonic timer gets its
//     deadline moved by the skew.
// (libfaketime 0.9.11 mended the first, wolfcw/libfaketime#426; the second
// is mended upstream after 0.9.12, in no release yet; the third is not.)
// Here a wait on the wall clock goes on to libfaketime, which moves its
// deadline by the skew as it should, and any other goes straight to glibc.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

// resolve finds name in libc, or in the next library after this one
// (libfaketime), once; a missing one is fatal.
static void *resolve(void **cache, int in_libc, const char *name) {
	void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	if (f != NULL)
		return f;
	void *where = RTLD_NEXT;
	if (in_libc && (where = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD)) == NULL) {
		fprintf(stderr, "splitbrain monotonic.so: libc.so.6 is not loaded\n");
		abort();
	}
	if ((f = dlsym(where, name)) == NULL) {
		fprintf(stderr, "splitbrain monotonic.so: no %s %s\n", in_libc ? "libc" : "next", name);
		abort();
	}
	__atomic_store_n(cache, f, __ATOMIC_RELEASE);
	return f;
}

// CALL calls name in libc when in_libc, else in libfaketime.
#define CALL(in_libc, name, type, ...)                                         \
	do {                                                                   \
		static void *fn[2];                                            \
		return ((type *)resolve(&fn[!!(in_libc)], (in_libc), name))(__VA_ARGS__); \
	} while (0)

typedef int clock_nanosleep_fn(clockid_t, int, const struct timespec *, struct timespec *);

int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem) {
	CALL(clock != CLOCK_REALTIME, "clock_nanosleep", clock_nanosleep_fn, clock, flags, req, rem);
}

typedef int cond_timedwait_fn(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);

int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *abstime) {
	// glibc keeps a condition variable's clock in bit 1 of __wrefs, set
	// once by pthread_cond_init (nptl/pthread_cond_common.c).
	int monotonic = __atomic_load_n(&cond->__data.__wrefs, __ATOMIC_RELAXED) & 2;
	CALL(monotonic, "pthread_cond_timedwait", cond_timedwait_fn, cond, mutex, abstime);
}

// wall_clock_timer says whether timerfd fd counts CLOCK_REALTIME, as the
// kernel shows it in /proc/self/fdinfo.
static int wall_clock_timer(int fd) {
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
	int f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return 1; // as libfaketime takes it
	ssize_t n = read(f, buf, sizeof buf - 1);
	close(f);
	buf[n > 0 ? n : 0] = 0;
	const char *clock = strstr(buf, "clockid:");
	return clock == NULL || atoi(clock + strlen("clockid:")) == CLOCK_REALTIME;
}

typedef int timerfd_settime_fn(int, int, const struct itimerspec *, struct itimerspec *);

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value) {
	CALL((flags & TFD_TIMER_ABSTIME) && !wall_clock_timer(fd), "timerfd_settime", timerfd_settime_fn, fd, flags, new_value, old_value);
}
