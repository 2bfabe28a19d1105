// receive_fds(): the file descriptors of one message on a Unix stream socket, as solbench/gpu/ipc.py
// send_fds sends them: batches of at most FD_BATCH fds, each on a 4-byte little-endian count of the fds
// still to come, this batch's included (one batch with count 0 when there are none). A header of its own so
// that it is compiled and tried on a CPU (tests/test_native_runner.py).
#pragma once
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "format.h"

static const size_t FD_BATCH = 64;

// Appends the fds to *out; "" or why not. Every batch is read even when one came short (the stream stays in
// step with the sender); the fds that did come are in *out either way, for the caller to close.
static std::string receive_fds(int sock, std::vector<int>* out) {
    std::string short_batch;
    for (;;) {
        unsigned char header[4];
        size_t have = 0, got = 0;
        bool truncated = false;
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * FD_BATCH)];
        while (have < sizeof header) {  // the batch's fds come with the header's first byte
            iovec iov{header + have, sizeof header - have};
            msghdr msg{};
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);  // not inherited by anything the candidate starts
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return n == 0 ? "the fd socket was closed" : format("recvmsg: %s", strerror(errno));
            truncated = truncated || (msg.msg_flags & MSG_CTRUNC);
            for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; ++i) {
                    int fd;
                    memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                    out->push_back(fd);
                    ++got;
                }
            }
            have += (size_t)n;
        }
        size_t expected = header[0] | header[1] << 8 | header[2] << 16 | (size_t)header[3] << 24;
        if ((truncated || got != std::min(expected, FD_BATCH)) && short_batch.empty())
            short_batch = format("a batch of %zu file descriptors arrived with %zu", std::min(expected, FD_BATCH), got);
        if (expected <= FD_BATCH) return short_batch;
    }
}
