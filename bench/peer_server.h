// The peer's llama-server as a benchmark driver (issue 27: its MTP decoding, --spec-type
// draft-mtp, is reachable only through the server): started on a free loopback port, asked over
// HTTP/1.1 on 127.0.0.1 only, stopped (SIGTERM, then SIGKILL) when the object goes. An instrument:
// nothing of the peer is linked; it runs as a separate process.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace qwenrt::bench {

class PeerServer {
 public:
  PeerServer() = default;
  ~PeerServer();
  PeerServer(const PeerServer&) = delete;
  PeerServer& operator=(const PeerServer&) = delete;

  // Runs `peer_dir`/bin/llama-server -m model --host 127.0.0.1 --port P -t threads `args...` and
  // waits (up to timeout_s) until GET /health answers 200. False with a message in *err.
  bool Start(const std::string& peer_dir, const std::string& model, int threads,
             const std::vector<std::string>& args, double timeout_s, std::string* err);
  // POST `path` with a JSON body; the parsed JSON reply. False with a message in *err (no answer,
  // an HTTP status other than 200, a body that is not JSON).
  bool Post(const std::string& path, const nlohmann::json& body, nlohmann::json* reply,
            std::string* err) const;
  void Stop();

 private:
  // One request on a new connection ("Connection: close"): the status code and the body.
  bool Request(const std::string& request, int* status, std::string* body, std::string* err) const;

  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;  // the server's stdout and stderr (for the error message when it fails)
};

}  // namespace qwenrt::bench
