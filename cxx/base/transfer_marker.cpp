#include "transfer_marker.h"

#include <vector>

#include "names.h"

namespace zkelect {

namespace {
constexpr size_t kMarkerMax = 512;
constexpr const char *kMarkerTag = "zkelect-transfer";
}  // namespace

std::string transfer_marker_text(const std::string &from, const std::string &to,
                                 const char *state, const std::string &id) {
    return std::string(kMarkerTag) + " 1 " + from + " " + to + " " + state + " " + id;
}

std::optional<TransferMarker> parse_transfer_marker(const std::string &data) {
    if (data.size() > kMarkerMax) return std::nullopt;
    std::vector<std::string> w;
    size_t i = 0;
    while (w.size() < 5) {
        size_t j = data.find(' ', i);
        if (j == std::string::npos) return std::nullopt;
        w.push_back(data.substr(i, j - i));
        i = j + 1;
    }
    std::string id = data.substr(i);
    if (w[0] != kMarkerTag || w[1] != "1" || !check_participant_id(id).empty())
        return std::nullopt;
    for (int k : {2, 3})
        if (w[k].find('/') != std::string::npos || !parse_sequence(w[k])) return std::nullopt;
    if (w[4] != "asked" && w[4] != "ready" && w[4] != "gone") return std::nullopt;
    return TransferMarker{w[2], w[3], w[4], id};
}

bool names_transfer_from(const std::string &data, const std::string &from) {
    return data.rfind(std::string(kMarkerTag) + " 1 " + from + " ", 0) == 0;
}

}  // namespace zkelect
