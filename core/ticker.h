/* A thread that calls a function at a fixed rate until stopped (the samplers of wb.python and
 * wb.memory), and the small /proc reads they share. */
#pragma once
#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct wb_ticker {
  pthread_t thread;
  pthread_mutex_t lock; /* held by the thread (released while it waits) and by wb_ticker_stop */
  pthread_cond_t wake;  /* signalled by wb_ticker_stop: a stop does not wait out a period */
  int running, stop;
  double period;
  void (*tick)(void *arg, double now); /* now: CLOCK_MONOTONIC seconds */
  void *arg;
} wb_ticker;

/* Starts calling tick(arg, now) hz times a second (the first call at once; a late call is not
 * made up for). Returns 0, or the pthread_create error. */
int wb_ticker_start(wb_ticker *t, double hz, void (*tick)(void *, double), void *arg);

/* Stops and joins the thread (after its current call, at once if it is waiting for the next);
 * harmless when not running. */
void wb_ticker_stop(wb_ticker *t);

/* Starts fn(arg) on a thread with every signal blocked, so that wb's signals (SIGINT, SIGCHLD, ...)
 * are taken by the thread that handles them; the thread is detached when t is NULL. Returns 0, or
 * the pthread_create error. */
int wb_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* Work done ahead of its use (a read-ahead) runs at nice 19, taking no CPU from the command or
 * from wb's own start while either wants it, until a thread of wb's must wait for it: that thread
 * hurries it first (wb_thread_hurry), so nothing wb needs waits behind a starved thread (on a
 * busy machine a nice-19 thread gets ~1.5% of a CPU: tens of ms of reading took seconds and the
 * capture's drain, waiting on it, let its ring overflow). The calling thread publishes its id in
 * *tid, then lowers itself, and only where its priority can be raised again (CAP_SYS_NICE, or an
 * RLIMIT_NICE reaching the caller's nice value); elsewhere it keeps the normal priority. Call it
 * again after each piece of work: a hurried thread goes back to the background. */
void wb_thread_background(_Atomic int *tid);

/* Gives thread tid (published by wb_thread_background; 0: none) the calling thread's nice value,
 * before the caller waits for its work. Failures are ignored: the caller waits as before. */
void wb_thread_hurry(_Atomic int *tid);

/* CLOCK_MONOTONIC in seconds. */
double wb_ticker_now(void);

/* Reads a small file (a /proc entry) into buf, NUL-terminated; returns its length, or -1. */
ssize_t wb_read_small(const char *path, char *buf, size_t len);
