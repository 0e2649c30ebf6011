// Where an elastic Horovod job's script finds riseml-elastic, the driver that starts one srun
// per worker node and goes on when a node fails.
#pragma once

#include <optional>
#include <string>

namespace riseml {

// riseml-elastic beside the site's riseml: command: "/usr/bin/riseml" gives
// "/usr/bin/riseml-elastic", "riseml" gives "riseml-elastic". nullopt when that command is not
// one word naming riseml (a wrapper with arguments, another program): the script then takes
// riseml-elastic from PATH.
std::optional<std::string> elastic_driver_beside(const std::string& riseml_command);

// The command the script runs: beside riseml when it can be, else riseml-elastic on PATH.
std::string elastic_driver_command(const std::string& riseml_command);

}  // namespace riseml
