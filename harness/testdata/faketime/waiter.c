// waiter waits 100 ms at a time on the monotonic clock, as a C server
// does: a sleep to a deadline, a condition variable that times out, a
// timer. After each wait it prints a line: what it was, how long it took
// and when it ended on the monotonic clock, what the wall clock read then,
// and the monotonic clock again after it, all in nanoseconds. A wait that fails ends it.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int64_t now(clockid_t clock) {
	struct timespec t;
	clock_gettime(clock, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static struct timespec timespec_of(int64_t ns) { return (struct timespec){ns / 1000000000, ns % 1000000000}; }

int main(void) {
	pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
	pthread_condattr_t attr;
	pthread_cond_t cond;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &attr);
	int timer = timerfd_create(CLOCK_MONOTONIC, 0);
	for (int i = 0;; i++) {
		const char *what = (const char *[]){"sleep", "wait", "timer"}[i % 3];
		int64_t begun = now(CLOCK_MONOTONIC);
		struct timespec deadline = timespec_of(begun + 100000000);
		int rc = 0;
		switch (i % 3) {
		case 0:
			while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL)) == EINTR) {
			}
			break;
		case 1:
			pthread_mutex_lock(&mutex);
			while ((rc = pthread_cond_timedwait(&cond, &mutex, &deadline)) == 0) { // no one signals
			}
			pthread_mutex_unlock(&mutex);
			rc = rc == ETIMEDOUT ? 0 : rc;
			break;
		case 2: {
			struct itimerspec t = {.it_value = deadline};
			uint64_t expirations;
			if (timerfd_settime(timer, TFD_TIMER_ABSTIME, &t, NULL) != 0 || read(timer, &expirations, sizeof expirations) < 0)
				rc = errno;
		}
		}
		if (rc != 0) {
			fprintf(stderr, "%s: %s\n", what, strerror(rc));
			return 1;
		}
		int64_t ended = now(CLOCK_MONOTONIC);
		int64_t wall = now(CLOCK_REALTIME);
		printf("%s %lld %lld %lld %lld\n", what, (long long)(ended - begun), (long long)ended, (long long)wall, (long long)now(CLOCK_MONOTONIC));
		fflush(stdout);
	}
}
