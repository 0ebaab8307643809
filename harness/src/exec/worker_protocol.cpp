#include "exec/worker_protocol.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace assay::wire {

bool send_message(int sock, const void* data, size_t len, const int* fds, int nfds) {
  iovec iov{const_cast<void*>(data), len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxBuffers)] = {};
  if (nfds > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
  }
  ssize_t n;
  do n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == ssize_t(len);
}

bool recv_message(int sock, void* data, size_t len, int* fds, int max_fds, int* nfds) {
  iovec iov{data, len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxBuffers)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  // A peer that dies with messages of ours unread (requests sent ahead to a
  // worker that crashed) makes Linux report ECONNRESET once, ahead of the
  // messages the peer sent before it died: read on, or its last replies are
  // lost and a crash is blamed on a call that had answered.
  ssize_t n;
  int resets = 0;
  do n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && (errno == EINTR || (errno == ECONNRESET && resets++ == 0)));
  if (nfds) *nfds = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int count = int((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (fds && nfds && *nfds < max_fds) fds[(*nfds)++] = fd;
      else close(fd);
    }
  }
  return n == ssize_t(len);
}

}  // namespace assay::wire
