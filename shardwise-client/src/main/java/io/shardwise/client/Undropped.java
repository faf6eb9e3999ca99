package io.shardwise.client;

import java.util.List;

/**
 * What {@link ShardwiseClient#undropTable} brought back.
 *
 * @param shardsFoundInTrash shards whose copy a live owner still had in its trash (an empty shard has none)
 * @param ownersNotAsked owners that were not live: each restores its copies when it starts
 */
public record Undropped(TableDescription table, int shardsFoundInTrash, List<String> ownersNotAsked) {

  public Undropped {
    ownersNotAsked = List.copyOf(ownersNotAsked);
  }
}
