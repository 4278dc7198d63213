/* Prints, every 20 ms, the kernel's realtime clock asked by a raw system
 * call (true time: no patch of the vDSO reaches it), then what glibc's
 * clocks read, each through the vDSO: clock_gettime(CLOCK_REALTIME) and
 * (CLOCK_MONOTONIC) in nanoseconds, then
 * gettimeofday() and time() in nanoseconds, then true time again: the
 * clocks were read between the two. nanosleep waits a relative time, which
 * the skew does not stretch. */
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int main(void) {
	struct timespec truth, rt, end, mono, pause = {0, 20000000};
	struct timeval tv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		syscall(SYS_clock_gettime, CLOCK_REALTIME, &truth);
		clock_gettime(CLOCK_REALTIME, &rt);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		gettimeofday(&tv, NULL);
		long long secs = (long long)time(NULL);
		syscall(SYS_clock_gettime, CLOCK_REALTIME, &end);
		printf("%lld %lld %lld %lld %lld %lld\n", truth.tv_sec * 1000000000LL + truth.tv_nsec, rt.tv_sec * 1000000000LL + rt.tv_nsec, mono.tv_sec * 1000000000LL + mono.tv_nsec,
		       tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL, secs * 1000000000LL, end.tv_sec * 1000000000LL + end.tv_nsec);
		nanosleep(&pause, NULL);
	}
}
