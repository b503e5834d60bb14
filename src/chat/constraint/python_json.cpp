// json.dumps on nlohmann values, reusing the chat template engine's Python string and float forms.
#include "chat/constraint/python_json.h"

#include "text/jinja/jinja_string.h"

namespace qwenrt {

void AppendPythonJson(const nlohmann::ordered_json& v, std::string* out) {
  switch (v.type()) {
    case nlohmann::ordered_json::value_t::null:
      *out += "null";
      return;
    case nlohmann::ordered_json::value_t::boolean:
      *out += v.get<bool>() ? "true" : "false";
      return;
    case nlohmann::ordered_json::value_t::number_integer:
      *out += std::to_string(v.get<int64_t>());
      return;
    case nlohmann::ordered_json::value_t::number_unsigned:
      *out += std::to_string(v.get<uint64_t>());
      return;
    case nlohmann::ordered_json::value_t::number_float:
      *out += jinja::PyFloatRepr(v.get<double>(), true);
      return;
    case nlohmann::ordered_json::value_t::string:
      jinja::AppendJsonString(v.get_ref<const std::string&>(), out);
      return;
    case nlohmann::ordered_json::value_t::array: {
      *out += "[";
      bool first = true;
      for (const auto& x : v) {
        if (!first) *out += ", ";
        first = false;
        AppendPythonJson(x, out);
      }
      *out += "]";
      return;
    }
    case nlohmann::ordered_json::value_t::object: {
      *out += "{";
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) *out += ", ";
        first = false;
        jinja::AppendJsonString(it.key(), out);
        *out += ": ";
        AppendPythonJson(it.value(), out);
      }
      *out += "}";
      return;
    }
    default:
      *out += "null";
      return;
  }
}

}  // namespace qwenrt
