// The coverage routes (docs/coverage.md): GET /api/v1/coverage, the cells of every package
// and version with their states, and GET /feeds/wheels.atom, the Atom feed of validated
// wheels and failed builds. Both read the newest builds through coverage/ (no store writes).
// Thread-safe: the functions keep no state; none throws.
#ifndef FARM_DAEMON_HTTP_REST_API_COVERAGE_H_
#define FARM_DAEMON_HTTP_REST_API_COVERAGE_H_

#include <string>

#include "daemon/http/server/dashboard_options.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

// GET /api/v1/coverage?package=&torch=&cuda=&python=&arch=&state=: {"now", "cells": [...],
// "counts": {state: n}, "states": [{"name", "words"}], "builds_read"}. Each cell has its
// axes, "state", "state_words", "cause", "job_id", "build_id", "wheel", "built_at",
// "validated_at" and "release_to_wheel_seconds" (null unless an upstream watch fired its
// build). 400 for an unknown state.
Response ApiCoverage(const DashboardDeps& deps, const Request& req);

// GET /feeds/wheels.atom: the newest validated wheels and failed builds, newest first, at
// most coverage::kMaxFeedEntries, linking to their job pages under `public_url` (or
// relative to the feed when "").
Response WheelsFeed(const DashboardDeps& deps, const std::string& public_url);

inline constexpr char kWheelsFeedPath[] = "/feeds/wheels.atom";

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_REST_API_COVERAGE_H_
