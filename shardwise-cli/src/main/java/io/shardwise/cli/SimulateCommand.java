package io.shardwise.cli;

import io.shardwise.console.SimulationOutput;
import io.shardwise.console.SimulationRequest;
import io.shardwise.core.hash.HashFunctions;
import io.shardwise.core.partition.PartitionerSpec;
import io.shardwise.core.partition.RingPartitioner;
import io.shardwise.core.partition.SlotPartitioner;
import io.shardwise.core.sim.Simulation;
import io.shardwise.core.sim.SimulationReport;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code shardwise simulate}: what each strategy does to real keys when nodes are added or removed. */
@Command(
    name = "simulate",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Show, for each partitioning strategy, how many keys move and how evenly they spread when --from nodes become --to.",
      "Keys are placed on --from nodes and again on --to nodes; moved keys are set against the theoretical minimum.",
      "With no options: 100,000 keys user-000000... from 10 to 11 nodes, every strategy."
    },
    footer = {
      "",
      "Strategies: " + "range, mod, ring, slots, hashrange, tokens, jump, rendezvous (or all).",
      "Hashes: murmur3-32, murmur3-128 (default), xxhash64, md5, fnv1a-32, fnv1a-64, blake2b-32, blake2b-N.",
      "",
      "Examples:",
      "  shardwise simulate --keys 'user-%%06d' --count 1000000 --from 10 --to 11",
      "  shardwise simulate --keys uuid --count 40 --from 4 --to 5 --strategy mod,ring --list",
      "  shardwise simulate --keys-file keys.txt --from 3 --to 4 --output json"
    })
final class SimulateCommand implements Callable<Integer> {

  @Spec CommandSpec spec;

  @ArgGroup(exclusive = true)
  KeysChoice keysChoice;

  static final class KeysChoice {
    @Option(names = "--keys-file", paramLabel = "FILE", description = "Keys from a UTF-8 file, one per line.")
    Path keysFile;

    @Option(
        names = "--keys",
        paramLabel = "FORMAT",
        description = "A printf pattern with one integer ('user-%%06d'), or uuid, timestamp, zipf. Default: " + SimulationRequest.DEFAULT_PATTERN_IN_HELP + ".")
    String format;
  }

  @Option(names = "--count", paramLabel = "N", description = "How many keys to generate. Default: ${DEFAULT-VALUE}.", defaultValue = "100000")
  long count;

  @Option(names = "--start", paramLabel = "S", description = "The first number a pattern formats. Default: ${DEFAULT-VALUE}.", defaultValue = "0")
  long start;

  @Option(names = "--from", paramLabel = "N", description = "Nodes before. Default: ${DEFAULT-VALUE}.", defaultValue = "10")
  int from;

  @Option(names = "--to", paramLabel = "M", description = "Nodes after. Default: ${DEFAULT-VALUE}.", defaultValue = "11")
  int to;

  @Option(names = "--strategy", paramLabel = "LIST", description = "Comma-separated strategies, or all. Default: ${DEFAULT-VALUE}.", defaultValue = "all")
  String strategies;

  @Option(names = "--hash", paramLabel = "NAME", description = "Hash function. Default: ${DEFAULT-VALUE}.", defaultValue = HashFunctions.DEFAULT_NAME)
  String hash;

  @Option(names = "--vnodes", paramLabel = "V", description = "ring: virtual nodes per node. Default: ${DEFAULT-VALUE}.", defaultValue = "" + PartitionerSpec.DEFAULT_VNODES)
  int vnodes;

  @Option(
      names = "--vnode-name",
      paramLabel = "TEMPLATE",
      description = "ring: virtual-node name, with {node} (or {shard}) and {v}. Default: ${DEFAULT-VALUE}.",
      defaultValue = RingPartitioner.DEFAULT_TEMPLATE)
  String vnodeName;

  @Option(names = "--slots", paramLabel = "K", description = "slots: slot count. Default: ${DEFAULT-VALUE}.", defaultValue = "" + SlotPartitioner.DEFAULT_SLOTS)
  int slots;

  @Option(names = "--tokens", paramLabel = "T", description = "tokens: random tokens per node. Default: ${DEFAULT-VALUE}.", defaultValue = "" + PartitionerSpec.DEFAULT_TOKENS)
  int tokens;

  @Option(names = "--split-points", paramLabel = "K1,K2,...", split = ",", description = "range: explicit split points (sorted, distinct) instead of pre-splitting from the keys.")
  List<String> splitPoints;

  @Option(names = "--seed", paramLabel = "X", description = "Seed for tokens, samples and generated keys. Default: ${DEFAULT-VALUE}.", defaultValue = "0")
  long seed;

  @Option(names = "--list", description = "Also list the moved keys, in input order.")
  boolean list;

  @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", description = "table, json or csv. Default: ${DEFAULT-VALUE}.", defaultValue = "table")
  OutputFormat output;

  @Override
  public Integer call() {
    SimulationReport report;
    try {
      SimulationRequest request = new SimulationRequest(
          keysChoice == null || keysChoice.format == null ? SimulationRequest.DEFAULT_PATTERN : keysChoice.format,
          null, count, start, from, to, strategies, hash, vnodes, vnodeName, slots, tokens,
          splitPoints == null ? List.of() : splitPoints, seed, list ? Simulation.Detail.MOVED_KEYS : Simulation.Detail.SUMMARY);
      report = request.run(keysChoice != null && keysChoice.keysFile != null ? KeysFile.open(keysChoice.keysFile) : null, name -> "--" + name);
    } catch (IllegalArgumentException e) {
      // Bad input, even when only placement can tell (more nodes than slots): a usage error.
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    PrintWriter out = spec.commandLine().getOut();
    switch (output) {
      case json:
        SimulationOutput.json(report, out);
        break;
      case csv:
        SimulationOutput.csv(report, out);
        break;
      default:
        SimulationOutput.table(report, out);
    }
    out.flush();
    return Main.EXIT_OK;
  }
}
