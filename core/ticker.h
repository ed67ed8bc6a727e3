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

/* The calling thread runs at nice 19 from now on: for work done ahead of its use (a read-ahead),
 * which must take no CPU from the command or from wb's own start while either wants it. */
void wb_thread_background(void);

/* CLOCK_MONOTONIC in seconds. */
double wb_ticker_now(void);

/* Reads a small file (a /proc entry) into buf, NUL-terminated; returns its length, or -1. */
ssize_t wb_read_small(const char *path, char *buf, size_t len);
