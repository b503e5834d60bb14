// PeerServer (peer_server.h): llama-server run as a child process and driven over loopback.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "peer_server.h"

namespace qwenrt::bench {
namespace {

// A port the kernel just handed out on 127.0.0.1 (free when we close it; the server binds it a
// moment later, and a clash only fails the start with a message).
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string ReadAll(const std::string& path) {
  std::string out;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
    std::fclose(f);
  }
  return out;
}

}  // namespace

PeerServer::~PeerServer() { Stop(); }

bool PeerServer::Start(const std::string& peer_dir, const std::string& model, int threads,
                       const std::vector<std::string>& args, double timeout_s, std::string* err) {
  Stop();
  port_ = FreeLoopbackPort();
  if (port_ == 0) {
    *err = "no free loopback port";
    return false;
  }
  log_ = "/tmp/qwenrt-bench-peer-" + std::to_string(getpid()) + ".log";
  std::vector<std::string> argv = {peer_dir + "/bin/llama-server",
                                   "-m",
                                   model,
                                   "--host",
                                   "127.0.0.1",
                                   "--port",
                                   std::to_string(port_),
                                   "-t",
                                   std::to_string(threads),
                                   "-np",
                                   "1"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (std::string& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    *err = "fork failed";
    return false;
  }
  if (pid == 0) {
    const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  pid_ = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    int wstatus = 0;
    if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      *err = "llama-server exited before it answered; its log:\n" + ReadAll(log_);
      return false;
    }
    int status = 0;
    std::string body, ignored;
    if (Request("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", &status,
                &body, &ignored) &&
        status == 200) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  *err = "llama-server did not answer /health within the timeout; its log:\n" + ReadAll(log_);
  Stop();
  return false;
}

void PeerServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 50; ++i) {  // 5 s, then SIGKILL
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  if (!log_.empty()) std::remove(log_.c_str());
}

bool PeerServer::Request(const std::string& request, int* status, std::string* body,
                         std::string* err) const {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    *err = "socket failed";
    return false;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    *err = "cannot connect to 127.0.0.1:" + std::to_string(port_);
    return false;
  }
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      close(fd);
      *err = "send failed";
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[65536];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;)
    reply.append(buf, static_cast<size_t>(n));
  close(fd);
  // "HTTP/1.1 200 OK\r\n...headers...\r\n\r\nbody" (the server closes after the body; a chunked
  // body is not expected for a non-streaming reply).
  const size_t head_end = reply.find("\r\n\r\n");
  if (reply.compare(0, 5, "HTTP/") != 0 || head_end == std::string::npos) {
    *err = "not an HTTP reply";
    return false;
  }
  *status = std::atoi(reply.c_str() + reply.find(' ') + 1);
  *body = reply.substr(head_end + 4);
  return true;
}

bool PeerServer::Post(const std::string& path, const nlohmann::json& body, nlohmann::json* reply,
                      std::string* err) const {
  const std::string payload = body.dump();
  const std::string request = "POST " + path +
                              " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              "Connection: close\r\nContent-Length: " +
                              std::to_string(payload.size()) + "\r\n\r\n" + payload;
  int status = 0;
  std::string text;
  if (!Request(request, &status, &text, err)) return false;
  if (status != 200) {
    *err = "llama-server answered " + std::to_string(status) + ": " + text.substr(0, 300);
    return false;
  }
  *reply = nlohmann::json::parse(text, nullptr, false);
  if (reply->is_discarded()) {
    *err = "llama-server's reply is not JSON";
    return false;
  }
  return true;
}

}  // namespace qwenrt::bench
